package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// What cyclonedx-gomod bin writes for a binary that links a module go.mod
// replaces with a local folder: the folder, "(devel)", no real version.
const raw = `{"bomFormat":"CycloneDX","specVersion":"1.6","metadata":{"component":{"name":"github.com/pdfexport/pdfexport","version":"v0.1.0"}},
"components":[
 {"bom-ref":"pkg:golang/./third_party/asynq@(devel)?type=module","name":"./third_party/asynq","version":"(devel)","purl":"pkg:golang/./third_party/asynq@(devel)?goarch=amd64&goos=linux&type=module"},
 {"bom-ref":"pkg:golang/github.com/redis/go-redis/v9@v9.23.0?type=module","name":"github.com/redis/go-redis/v9","version":"v9.23.0","purl":"pkg:golang/github.com/redis/go-redis/v9@v9.23.0?type=module"}],
"dependencies":[{"ref":"pkg:golang/github.com/pdfexport/pdfexport?type=module","dependsOn":["pkg:golang/./third_party/asynq@(devel)?type=module"]}]}`

// TestRewrite: the local folder becomes the module it replaces, at the
// version go.mod requires, with its patch as pedigree; every reference
// follows; other components and the timestamp are as given.
func TestRewrite(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "third_party"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "third_party", "asynq-idle-wait.patch"), []byte("--- a\n+++ b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reps := []replacement{{Dir: "./third_party/asynq", Path: "github.com/hibiken/asynq", Version: "v0.26.0", Patches: []string{"third_party/asynq-idle-wait.patch"}, module: dir}}
	cases := []struct {
		name    string
		reps    []replacement
		wantErr string
	}{
		{"replaced", reps, ""},
		{"replacement not in the binary", []replacement{{Dir: "./third_party/other", Path: "example.com/other", Version: "v1.0.0", module: dir}}, "no component \"./third_party/other\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := rewrite([]byte(raw), c.reps, "2026-12-01T18:51:46Z")
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one naming %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(out), "third_party/asynq@") || strings.Contains(string(out), "(devel)") {
				t.Errorf("the local folder is still named:\n%s", out)
			}
			var bom struct {
				Metadata struct {
					Timestamp string `json:"timestamp"`
				} `json:"metadata"`
				Components []struct {
					BOMRef   string `json:"bom-ref"`
					Name     string `json:"name"`
					Version  string `json:"version"`
					Purl     string `json:"purl"`
					Pedigree struct {
						Patches []struct {
							Type string `json:"type"`
							Diff struct {
								URL  string `json:"url"`
								Text struct {
									Content string `json:"content"`
								} `json:"text"`
							} `json:"diff"`
						} `json:"patches"`
					} `json:"pedigree"`
				} `json:"components"`
				Dependencies []struct {
					DependsOn []string `json:"dependsOn"`
				} `json:"dependencies"`
			}
			if err := json.Unmarshal(out, &bom); err != nil {
				t.Fatal(err)
			}
			a := bom.Components[0]
			if a.Name != "github.com/hibiken/asynq" || a.Version != "v0.26.0" ||
				a.Purl != "pkg:golang/github.com/hibiken/asynq@v0.26.0?goarch=amd64&goos=linux&type=module" ||
				a.BOMRef != "pkg:golang/github.com/hibiken/asynq@v0.26.0?type=module" {
				t.Errorf("asynq component %+v", a)
			}
			if p := a.Pedigree.Patches; len(p) != 1 || p[0].Type != "unofficial" || p[0].Diff.URL != "third_party/asynq-idle-wait.patch" || p[0].Diff.Text.Content != "--- a\n+++ b\n" {
				t.Errorf("asynq pedigree %+v", a.Pedigree)
			}
			if got := bom.Dependencies[0].DependsOn[0]; got != a.BOMRef {
				t.Errorf("dependsOn %q, want %q", got, a.BOMRef)
			}
			if r := bom.Components[1]; r.Name != "github.com/redis/go-redis/v9" || r.Version != "v9.23.0" {
				t.Errorf("go-redis changed: %+v", r)
			}
			if bom.Metadata.Timestamp != "2026-12-01T18:51:46Z" {
				t.Errorf("timestamp %q, want the commit's", bom.Metadata.Timestamp)
			}
		})
	}
}

// TestLocalReplacements: this repository's go.mod replaces asynq with
// ./third_party/asynq at the version it requires, with its patch beside.
func TestLocalReplacements(t *testing.T) {
	reps, err := localReplacements("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 || reps[0].Path != "github.com/hibiken/asynq" || reps[0].Dir != "./third_party/asynq" || reps[0].Version != "v0.26.0" ||
		len(reps[0].Patches) != 1 || reps[0].Patches[0] != "third_party/asynq-idle-wait.patch" {
		t.Errorf("local replacements %+v", reps)
	}
}

// TestLinked: a replacement is renamed only in a binary built with it; a
// binary that never links the module (bin/allinone and asynq) is no error,
// and a dependency on the upstream module itself is not the replacement.
func TestLinked(t *testing.T) {
	asynq := replacement{Dir: "./third_party/asynq", Path: "github.com/hibiken/asynq", Version: "v0.26.0"}
	cases := []struct {
		name string
		deps []*debug.Module
		want int
	}{
		{"linked through the replacement", []*debug.Module{{Path: "github.com/hibiken/asynq", Version: "v0.26.0", Replace: &debug.Module{Path: "./third_party/asynq", Version: "(devel)"}}}, 1},
		{"not linked", []*debug.Module{{Path: "github.com/redis/go-redis/v9", Version: "v9.23.0"}}, 0},
		{"upstream, not replaced", []*debug.Module{{Path: "github.com/hibiken/asynq", Version: "v0.26.0"}}, 0},
		{"no dependencies", nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := linked([]replacement{asynq}, c.deps); len(got) != c.want {
				t.Fatalf("linked = %v, want %d", got, c.want)
			}
		})
	}
}
