package config

import (
	"os"
	"slices"
	"strings"
	"testing"
)

const (
	tableBegin = "<!-- config-table:begin (generated from internal/platform/config; TestREADMEListsEveryVariable keeps it in sync) -->"
	tableEnd   = "<!-- config-table:end -->"
)

// MarkdownTable renders Variables as the configuration table of
// docs/CONFIGURATION.md.
func markdownTable() string {
	var b strings.Builder
	b.WriteString("| variable | default | read by | meaning |\n|---|---|---|---|\n")
	for _, v := range Variables() {
		def := "—"
		if v.Default != "" {
			def = "`" + v.Default + "`"
		}
		b.WriteString("| `" + v.Name + "` | " + def + " | " + strings.Join(v.Binaries, ", ") + " | " + strings.ReplaceAll(v.Doc, "|", "\\|") + " |\n")
	}
	return b.String()
}

// TestVariables_SayWhoReadsThem: every variable names the binaries that
// read it, from Binaries, in that order, so each --help and the table's
// column list a variable only where it does something.
func TestVariables_SayWhoReadsThem(t *testing.T) {
	for _, v := range Variables() {
		if len(v.Binaries) == 0 {
			t.Errorf("%s has no bins tag (worker, enqueue, api: the binaries that read it)", v.Name)
		}
		last := -1
		for _, b := range v.Binaries {
			i := slices.Index(Binaries, b)
			if i <= last {
				t.Errorf("%s: bins %v: want a subset of %v in that order", v.Name, v.Binaries, Binaries)
			}
			last = i
		}
	}
	if got := VariablesFor("worker"); slices.ContainsFunc(got, func(v Variable) bool { return v.Name == "MAX_RETRY" }) {
		t.Error("the worker's variables list MAX_RETRY, which only enqueuers read")
	}
}

// TestREADMEListsEveryVariable fails when the configuration table of
// docs/CONFIGURATION.md differs from the variables the code reads.
// Regenerate it with UPDATE_README=1 go test ./internal/platform/config -run TestREADME.
// The table lived in the README until it moved to docs/; the test's name and
// UPDATE_README stay so that the command every note gives keeps working.
func TestREADMEListsEveryVariable(t *testing.T) {
	const path = "../../../docs/CONFIGURATION.md"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	begin, end := strings.Index(readme, tableBegin), strings.Index(readme, tableEnd)
	if begin < 0 || end < begin {
		t.Fatalf("%s lacks the config table markers", path)
	}
	want := tableBegin + "\n" + markdownTable() + tableEnd
	got := readme[begin : end+len(tableEnd)]
	if got == want {
		return
	}
	if os.Getenv("UPDATE_README") == "1" {
		if err := os.WriteFile(path, []byte(readme[:begin]+want+readme[end+len(tableEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s: configuration table is out of date; run UPDATE_README=1 go test ./internal/platform/config -run TestREADME", path)
}
