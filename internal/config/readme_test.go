package config

import (
	"os"
	"strings"
	"testing"
)

const (
	tableBegin = "<!-- config-table:begin (generated from internal/config; TestREADMEListsEveryVariable keeps it in sync) -->"
	tableEnd   = "<!-- config-table:end -->"
)

// MarkdownTable renders Variables as the README's configuration table.
func markdownTable() string {
	var b strings.Builder
	b.WriteString("| variable | default | meaning |\n|---|---|---|\n")
	for _, v := range Variables() {
		def := "—"
		if v.Default != "" {
			def = "`" + v.Default + "`"
		}
		b.WriteString("| `" + v.Name + "` | " + def + " | " + strings.ReplaceAll(v.Doc, "|", "\\|") + " |\n")
	}
	return b.String()
}

// TestREADMEListsEveryVariable fails when the README's configuration table
// differs from the variables the code reads. Regenerate it with
// UPDATE_README=1 go test ./internal/config -run TestREADME.
func TestREADMEListsEveryVariable(t *testing.T) {
	const path = "../../README.md"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	begin, end := strings.Index(readme, tableBegin), strings.Index(readme, tableEnd)
	if begin < 0 || end < begin {
		t.Fatalf("README.md lacks the config table markers")
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
	t.Fatalf("README.md configuration table is out of date; run UPDATE_README=1 go test ./internal/config -run TestREADME")
}
