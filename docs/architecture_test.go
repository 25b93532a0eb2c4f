// Package docs holds the design documentation (ARCHITECTURE.md); its test
// keeps the page's package list and import table in line with the module
// as `go list` reports it.
package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const (
	module      = "github.com/pdfexport/pdfexport"
	archPath    = "ARCHITECTURE.md"
	rolesHead   = "## Why each package exists"
	importsHead = "## Imports"
	tableBegin  = "<!-- imports-table:begin (generated from go list; docs/'s test keeps it in sync) -->"
	tableEnd    = "<!-- imports-table:end -->"
)

// pkg is one package of the module: its path relative to the module
// ("internal/render", "bench") and the module's packages it imports.
type pkg struct {
	rel     string
	imports []string
}

// modulePackages runs go list over the module and over each nested module
// (a directory beside the root's packages with its own go.mod: deployments,
// api), test files not counted.
func modulePackages(t *testing.T) []pkg {
	t.Helper()
	dirs := []string{".."}
	nested, err := filepath.Glob("../*/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range nested {
		dirs = append(dirs, filepath.Dir(m))
	}
	var pkgs []pkg
	for _, dir := range dirs {
		cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			msg := ""
			if ee, ok := err.(*exec.ExitError); ok {
				msg = string(ee.Stderr)
			}
			t.Fatalf("go list ./... in %s: %v\n%s", dir, err, msg)
		}
		for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
			fields := strings.Fields(line)
			p := pkg{rel: rel(fields[0])}
			for _, imp := range fields[1:] {
				if imp == module || strings.HasPrefix(imp, module+"/") {
					p.imports = append(p.imports, rel(imp))
				}
			}
			slices.Sort(p.imports)
			pkgs = append(pkgs, p)
		}
	}
	slices.SortFunc(pkgs, func(a, b pkg) int { return strings.Compare(a.rel, b.rel) })
	return pkgs
}

func rel(path string) string {
	if path == module {
		return "."
	}
	return strings.TrimPrefix(path, module+"/")
}

// section is the text of the level-2 section that starts with head.
func section(t *testing.T, doc, head string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+head+"\n")
	if i < 0 {
		t.Fatalf("%s has no section %q", archPath, head)
	}
	s := doc[i+1:]
	if j := strings.Index(s[len(head):], "\n## "); j >= 0 {
		s = s[:len(head)+j]
	}
	return s
}

// firstColumn matches a table row's first cell when it is one code span.
var firstColumn = regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")

// TestArchitectureNamesEveryPackage fails naming each package of the
// module that the package table of ARCHITECTURE.md lacks, and each row
// that names a package the module no longer has.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	raw, err := os.ReadFile(archPath)
	if err != nil {
		t.Fatal(err)
	}
	roles := section(t, string(raw), rolesHead)
	listed := map[string]bool{}
	for _, m := range firstColumn.FindAllStringSubmatch(roles, -1) {
		listed[strings.TrimSuffix(m[1], "/")] = true
	}
	exists := map[string]bool{}
	for _, p := range modulePackages(t) {
		exists[p.rel] = true
		if !listed[p.rel] {
			t.Errorf("%s: the package table under %q has no row for %s", archPath, rolesHead, p.rel)
		}
	}
	for name := range listed {
		if !exists[name] {
			t.Errorf("%s: the package table under %q names %s, which go list ./... does not list", archPath, rolesHead, name)
		}
	}
}

// importsTable is the generated table of the module's imports.
func importsTable(pkgs []pkg) string {
	var b strings.Builder
	b.WriteString("| package | imports of the module's packages |\n|---|---|\n")
	for _, p := range pkgs {
		imps := "—"
		if len(p.imports) > 0 {
			imps = "`" + strings.Join(p.imports, "`, `") + "`"
		}
		b.WriteString("| `" + p.rel + "` | " + imps + " |\n")
	}
	return b.String()
}

// TestArchitectureImportTableIsGoList fails when the import table of
// ARCHITECTURE.md differs from go list. Regenerate it with
// UPDATE_ARCHITECTURE=1 go test ./docs -run TestArchitectureImportTable.
func TestArchitectureImportTableIsGoList(t *testing.T) {
	raw, err := os.ReadFile(archPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	begin, end := strings.Index(doc, tableBegin), strings.Index(doc, tableEnd)
	if begin < 0 || end < begin || !strings.Contains(section(t, doc, importsHead), tableBegin) {
		t.Fatalf("%s lacks the import table markers under %q", archPath, importsHead)
	}
	want := tableBegin + "\n" + importsTable(modulePackages(t)) + tableEnd
	if doc[begin:end+len(tableEnd)] == want {
		return
	}
	if os.Getenv("UPDATE_ARCHITECTURE") == "1" {
		if err := os.WriteFile(archPath, []byte(doc[:begin]+want+doc[end+len(tableEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s: the import table is out of date; run UPDATE_ARCHITECTURE=1 go test ./docs -run TestArchitectureImportTable", archPath)
}

const shipsHead = "### What ships"

// TestArchitectureShipsWhatTheBinariesLink fails when the "What ships"
// table differs from the module's packages the three binaries link, so a
// test helper or a benchmark baseline cannot pass for shipping code, nor a
// new shipping package hide among the helpers.
func TestArchitectureShipsWhatTheBinariesLink(t *testing.T) {
	raw, err := os.ReadFile(archPath)
	if err != nil {
		t.Fatal(err)
	}
	roles := section(t, string(raw), rolesHead)
	i := strings.Index(roles, "\n"+shipsHead+"\n")
	if i < 0 {
		t.Fatalf("%s has no %q under %q", archPath, shipsHead, rolesHead)
	}
	ships := roles[i+len(shipsHead)+2:]
	if j := strings.Index(ships, "\n### "); j >= 0 {
		ships = ships[:j]
	}
	var listed []string
	for _, m := range firstColumn.FindAllStringSubmatch(ships, -1) {
		listed = append(listed, m[1])
	}
	slices.Sort(listed)

	cmd := exec.Command("go", "list", "-deps", "./cmd/worker", "./cmd/enqueue", "./cmd/api", "./cmd/allinone", "./exportclient")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var linked []string
	for _, path := range strings.Fields(string(out)) {
		if path == module || strings.HasPrefix(path, module+"/") {
			linked = append(linked, rel(path))
		}
	}
	slices.Sort(linked)
	if !slices.Equal(listed, linked) {
		t.Errorf("%s: %q lists %v;\nthe binaries and exportclient link %v", archPath, shipsHead, listed, linked)
	}
}

// benchmarkFunc matches the declaration of a Go benchmark.
var benchmarkFunc = regexp.MustCompile(`(?m)^func Benchmark\w*\(`)

// TestBenchmarksLiveInBenchFiles fails naming a Go benchmark declared
// outside a *bench_test.go file, where a reader of the package would take
// it for a test.
func TestBenchmarksLiveInBenchFiles(t *testing.T) {
	cmd := exec.Command("git", "ls-files", "*_test.go")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	found := 0
	for _, name := range strings.Fields(string(out)) {
		if strings.HasPrefix(name, "third_party/") {
			continue
		}
		b, err := os.ReadFile("../" + name)
		if err != nil {
			t.Fatal(err)
		}
		n := len(benchmarkFunc.FindAllIndex(b, -1))
		found += n
		if n > 0 && !strings.HasSuffix(name, "bench_test.go") {
			t.Errorf("%s declares %d benchmark(s); they belong in a *bench_test.go file", name, n)
		}
	}
	if found == 0 {
		t.Fatal("no benchmark found: the file list or the pattern is wrong")
	}
}
