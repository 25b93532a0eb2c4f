// Command sbom is the release's SBOM step (.goreleaser.yaml, sboms): it runs
// the pinned cyclonedx-gomod on one built binary, which reads the modules
// the binary records, and then names each module that go.mod replaces with a
// local folder as the upstream release it is. A binary records the vendored
// asynq only as "./third_party/asynq (devel)", which a scanner cannot match
// against advisories; the SBOM says github.com/hibiken/asynq v0.26.0 (the
// version go.mod requires) with the local patch as its pedigree.
//
//	sbom -cyclonedx bin/cyclonedx-gomod -module . -version v0.1.0 -date 2026-12-01T18:51:46Z -output worker.cdx.json dist/worker
//
// Timestamp and serial number are left to -date and out, so two runs over
// one binary write the same bytes.
package main

import (
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "sbom:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("sbom", flag.ContinueOnError)
	tool := fs.String("cyclonedx", "cyclonedx-gomod", "the cyclonedx-gomod binary")
	module := fs.String("module", ".", "the module's root (its go.mod names the replacements)")
	version := fs.String("version", "", "the release version of the binary (v0.1.0)")
	date := fs.String("date", "", "the SBOM's timestamp, RFC 3339 (the commit's date)")
	output := fs.String("output", "", "where to write the SBOM (CycloneDX JSON)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 || *output == "" || *version == "" {
		return errors.New("usage: sbom -version V -output FILE [-date RFC3339] [-cyclonedx PATH] [-module DIR] BINARY")
	}
	binary := fs.Arg(0)
	var raw bytes.Buffer
	cmd := exec.Command(*tool, "bin", "-json", "-noserial", "-notimestamp", "-version", *version, binary)
	cmd.Stdout, cmd.Stderr = &raw, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s bin %s: %w", *tool, binary, err)
	}
	local, err := localReplacements(*module)
	if err != nil {
		return err
	}
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		return fmt.Errorf("%s: %w", binary, err)
	}
	out, err := rewrite(raw.Bytes(), linked(local, info.Deps), *date)
	if err != nil {
		return fmt.Errorf("%s: %w", binary, err)
	}
	return os.WriteFile(*output, out, 0o644)
}

// replacement is a module that go.mod replaces with a folder of this
// repository: what the binary records (Dir) and what it really is.
type replacement struct {
	Dir, Path, Version string
	Patches            []string // the patch files beside Dir: <dir>-*.patch
	module             string
}

// linked keeps the replacements the binary was built with: bin/allinone
// links no asynq, and its SBOM has nothing to rename. One the binary does
// link must then be in the SBOM (rewrite says so if it is not).
func linked(reps []replacement, deps []*debug.Module) []replacement {
	var in []replacement
	for _, rep := range reps {
		for _, d := range deps {
			if d.Path == rep.Path && d.Replace != nil && d.Replace.Path == rep.Dir {
				in = append(in, rep)
				break
			}
		}
	}
	return in
}

func localReplacements(module string) ([]replacement, error) {
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = module
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go mod edit -json in %s: %w", module, err)
	}
	var mod struct {
		Require []struct{ Path, Version string }
		Replace []struct {
			Old, New struct{ Path, Version string }
		}
	}
	if err := json.Unmarshal(out, &mod); err != nil {
		return nil, fmt.Errorf("go mod edit -json: %w", err)
	}
	var reps []replacement
	for _, r := range mod.Replace {
		if !strings.HasPrefix(r.New.Path, "./") && !strings.HasPrefix(r.New.Path, "../") {
			continue
		}
		rep := replacement{Dir: r.New.Path, Path: r.Old.Path, Version: r.Old.Version, module: module}
		for _, q := range mod.Require {
			if q.Path == r.Old.Path && rep.Version == "" {
				rep.Version = q.Version
			}
		}
		if rep.Version == "" {
			return nil, fmt.Errorf("go.mod: replace of %s names no version and nothing requires one", r.Old.Path)
		}
		patches, err := filepath.Glob(filepath.Join(module, filepath.Clean(r.New.Path)+"-*.patch"))
		if err != nil {
			return nil, err
		}
		for _, p := range patches {
			rel, err := filepath.Rel(module, p)
			if err != nil {
				return nil, err
			}
			rep.Patches = append(rep.Patches, filepath.ToSlash(rel))
		}
		reps = append(reps, rep)
	}
	return reps, nil
}

// rewrite renames each local replacement's component (and every reference
// to it) to the module it replaces, and records its patches as pedigree.
// Every other field stays as cyclonedx-gomod wrote it.
func rewrite(raw []byte, reps []replacement, date string) ([]byte, error) {
	var bom map[string]any
	if err := json.Unmarshal(raw, &bom); err != nil {
		return nil, fmt.Errorf("cyclonedx-gomod output: %w", err)
	}
	comps, _ := bom["components"].([]any)
	refs := map[string]string{}
	for _, rep := range reps {
		found := false
		for _, c := range comps {
			comp, _ := c.(map[string]any)
			if comp == nil || comp["name"] != rep.Dir {
				continue
			}
			found = true
			oldRef := "pkg:golang/" + rep.Dir + "@" + fmt.Sprint(comp["version"])
			refs[oldRef] = "pkg:golang/" + rep.Path + "@" + rep.Version
			comp["name"], comp["version"] = rep.Path, rep.Version
			ped := map[string]any{"notes": "built from " + rep.Dir + " of this repository: " + rep.Path + " " + rep.Version + " with the patches listed (third_party/README.md)"}
			var patches []any
			for _, p := range rep.Patches {
				text, err := os.ReadFile(filepath.Join(rep.module, p))
				if err != nil {
					return nil, err
				}
				patches = append(patches, map[string]any{"type": "unofficial", "diff": map[string]any{
					"url":  p,
					"text": map[string]any{"contentType": "text/x-diff", "content": string(text)},
				}})
			}
			if patches != nil {
				ped["patches"] = patches
			}
			comp["pedigree"] = ped
		}
		if !found {
			return nil, fmt.Errorf("no component %q (go.mod replaces %s with it)", rep.Dir, rep.Path)
		}
	}
	fixed := renameRefs(bom, refs)
	if date != "" {
		if md, ok := fixed.(map[string]any)["metadata"].(map[string]any); ok {
			md["timestamp"] = date
		}
	}
	out, err := json.MarshalIndent(fixed, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// renameRefs replaces the old purl prefix in every string (bom-ref, purl,
// dependsOn), keeping the qualifiers after it.
func renameRefs(v any, refs map[string]string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = renameRefs(e, refs)
		}
	case []any:
		for i, e := range x {
			x[i] = renameRefs(e, refs)
		}
	case string:
		for old, nu := range refs {
			if strings.HasPrefix(x, old) {
				return nu + strings.TrimPrefix(x, old)
			}
		}
	}
	return v
}
