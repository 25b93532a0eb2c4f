//go:build release

package deployments

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/platform/buildinfo"
)

// Run by `make release-check` after `make release-snapshot` (never by make
// test: a cold snapshot compiles six binaries, minutes on two cores). It
// checks what GoReleaser wrote into dist/, then builds the snapshot a second
// time into dist.repro/ and compares the bytes.

var platforms = []string{"amd64", "arm64"}

func gitOut(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", ".."}, args...)...).Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

func requiredVersions(t *testing.T) map[string]string {
	t.Helper()
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var mod struct {
		Require []struct{ Path, Version string }
	}
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatal(err)
	}
	v := map[string]string{}
	for _, r := range mod.Require {
		v[r.Path] = r.Version
	}
	return v
}

func TestReleaseSnapshot(t *testing.T) {
	if testing.Short() {
		t.Skip("checks a release snapshot")
	}
	dist := "../dist"
	version := strings.TrimPrefix(buildinfo.Release, "v")
	binaries := makefileBuilds(t)
	commit := gitOut(t, "rev-parse", "HEAD")
	var unix int64
	if _, err := fmt.Sscan(gitOut(t, "log", "-1", "--format=%ct"), &unix); err != nil {
		t.Fatal(err)
	}
	date := time.Unix(unix, 0).UTC().Format(time.RFC3339)
	if _, err := os.Stat(filepath.Join(dist, "SHA256SUMS")); err != nil {
		t.Fatalf("%v: run make release-snapshot first (make release-check does)", err)
	}

	t.Run("SHA256SUMS", func(t *testing.T) {
		cmd := exec.Command("sha256sum", "--strict", "-c", "SHA256SUMS")
		cmd.Dir = dist
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("sha256sum -c SHA256SUMS: %v\n%s", err, out)
		}
		sums, _ := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
		for _, arch := range platforms {
			want := []string{fmt.Sprintf("pdfexport_%s_linux_%s.tar.gz", version, arch)}
			for name := range binaries {
				want = append(want, fmt.Sprintf("%s_%s_linux_%s.cdx.json", name, version, arch))
			}
			for _, w := range want {
				if !bytes.Contains(sums, []byte("  "+w+"\n")) {
					t.Errorf("SHA256SUMS does not list %s:\n%s", w, sums)
				}
			}
		}
	})

	t.Run("archives", func(t *testing.T) {
		for _, arch := range platforms {
			name := fmt.Sprintf("pdfexport_%s_linux_%s.tar.gz", version, arch)
			files := readTarGz(t, filepath.Join(dist, name))
			pages, err := filepath.Glob("../docs/*.md") // the pages the README links to
			if err != nil || len(pages) == 0 {
				t.Fatalf("docs/*.md: %v %v", pages, err)
			}
			shipped := []string{"LICENSE", "NOTICE", "README.md", "CHANGELOG.md", "third_party/asynq/LICENSE"}
			for _, p := range pages {
				shipped = append(shipped, "docs/"+filepath.Base(p))
			}
			for _, f := range shipped {
				want, err := os.ReadFile(filepath.Join("..", f))
				if err != nil {
					t.Fatal(err)
				}
				if got, ok := files[f]; !ok || !bytes.Equal(got.data, want) {
					t.Errorf("%s: %s missing or not the repository's", name, f)
				}
			}
			// The binaries in the order .goreleaser.yaml builds them: built
			// at once, they land in the order their builds end, and two
			// snapshots of one commit differ.
			if got, want := binaryOrder(entryOrder(files), binaries), configBinaries(t); got != want {
				t.Errorf("%s holds its binaries in the order %s, not the builds' %s: was release-snapshot run without RELEASE_FLAGS (--parallelism 1)?", name, got, want)
			}
			for bin := range binaries {
				f, ok := files[bin]
				if !ok {
					t.Errorf("%s lacks %s", name, bin)
					continue
				}
				if f.mode&0o111 == 0 {
					t.Errorf("%s: %s is not executable (%v)", name, bin, f.mode)
				}
				checkELF(t, name+":"+bin, f.data, arch)
			}
		}
	})

	t.Run("--version", func(t *testing.T) {
		for bin := range binaries {
			path := filepath.Join(dist, bin+"_linux_amd64_v1", bin)
			out, err := exec.Command(path, "--version").Output()
			if err != nil {
				t.Fatalf("%s --version: %v", path, err)
			}
			want := fmt.Sprintf("pdfexport %s v%s (commit %s, built %s)\n", bin, version, commit, date)
			if string(out) != want {
				t.Errorf("%s --version printed %q, want %q", path, out, want)
			}
		}
	})

	t.Run("SBOMs", func(t *testing.T) {
		req := requiredVersions(t)
		for bin, main := range binaries {
			// What each binary links: asynq and go-redis all but allinone
			// (which only starts the others) do, chromedp only the worker
			// (enqueue and api never load Chromium code).
			linked := map[string]bool{}
			list := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", main)
			list.Dir = ".."
			out, err := list.Output()
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range strings.Fields(string(out)) {
				linked[m] = true
			}
			for _, arch := range platforms {
				name := fmt.Sprintf("%s_%s_linux_%s.cdx.json", bin, version, arch)
				comps := readSBOM(t, filepath.Join(dist, name))
				for _, m := range []string{"github.com/hibiken/asynq", "github.com/redis/go-redis/v9", "github.com/chromedp/chromedp"} {
					c, listed := comps[m]
					switch {
					case linked[m] && !listed:
						t.Errorf("%s: %s links %s but the SBOM does not list it", name, bin, m)
					case !linked[m] && listed:
						t.Errorf("%s: lists %s, which %s does not link", name, m, bin)
					case listed && c.Version != req[m]:
						t.Errorf("%s: %s %s, go.mod requires %s", name, m, c.Version, req[m])
					}
				}
				if bin == "worker" && comps["github.com/chromedp/chromedp"].Version == "" {
					t.Errorf("%s: the worker's SBOM lacks chromedp", name)
				}
				a, listed := comps["github.com/hibiken/asynq"]
				if listed && (a.Pedigree == nil || len(a.Pedigree.Patches) == 0 || a.Pedigree.Patches[0].Diff.URL != "third_party/asynq-idle-wait.patch") {
					t.Errorf("%s: asynq's pedigree does not name third_party/asynq-idle-wait.patch: %+v", name, a.Pedigree)
				}
				for path := range comps {
					if strings.HasPrefix(path, "./") || strings.HasPrefix(path, "../") {
						t.Errorf("%s: lists the local folder %s instead of the module it replaces", name, path)
					}
				}
			}
		}
	})

	t.Run("reproducible", func(t *testing.T) {
		// The whole snapshot again, into dist.repro/ (beside dist/, so the
		// SBOM step's ../bin paths hold): every checksum must be the same.
		cfg, err := os.ReadFile("../.goreleaser.yaml")
		if err != nil {
			t.Fatal(err)
		}
		tmpCfg := filepath.Join(t.TempDir(), "goreleaser.yaml")
		if err := os.WriteFile(tmpCfg, bytes.Replace(cfg, []byte("\ndist: dist\n"), []byte("\ndist: dist.repro\n"), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll("../dist.repro") })
		// The flags make release-snapshot built dist/ with (one build at a
		// time: the archives list binaries in the order their builds end).
		flags, ok := os.LookupEnv("RELEASE_FLAGS")
		if !ok {
			t.Fatal("RELEASE_FLAGS is not set: run make release-check, which passes release-snapshot's")
		}
		cmd := exec.Command("bin/goreleaser", append([]string{"release", "--snapshot", "--clean", "--config", tmpCfg}, strings.Fields(flags)...)...)
		cmd.Dir = ".."
		if out, err := exec.Command("git", "-C", "..", "remote").Output(); err == nil && len(bytes.TrimSpace(out)) == 0 {
			cmd.Env = append(os.Environ(), "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=remote.origin.url", "GIT_CONFIG_VALUE_0=https://github.com/pdfexport/pdfexport")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("second snapshot: %v\n%s", err, out)
		}
		a, _ := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
		b, err := os.ReadFile("../dist.repro/SHA256SUMS")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("two snapshots of one commit differ:\n%s\n---\n%s", a, b)
			for _, name := range differingSums(a, b) {
				t.Errorf("%s: %s", name, explainDifference(t, filepath.Join(dist, name), filepath.Join("../dist.repro", name)))
			}
		}
		for bin := range binaries {
			for _, dir := range []string{bin + "_linux_amd64_v1", bin + "_linux_arm64_v8.0"} {
				x, err1 := os.ReadFile(filepath.Join(dist, dir, bin))
				y, err2 := os.ReadFile(filepath.Join("../dist.repro", dir, bin))
				if err := errors.Join(err1, err2); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(x, y) {
					t.Errorf("%s/%s differs between two builds: %s", dir, bin, explainDifference(t, filepath.Join(dist, dir, bin), filepath.Join("../dist.repro", dir, bin)))
				}
			}
		}
	})
}

type tarFile struct {
	data   []byte
	mode   os.FileMode
	header tar.Header
	index  int // its place in the archive, from 0
}

// differingSums lists the files whose checksum differs between two
// SHA256SUMS, or that only one of them lists.
func differingSums(a, b []byte) []string {
	sums := func(raw []byte) map[string]string {
		m := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			if sum, name, ok := strings.Cut(line, "  "); ok {
				m[name] = sum
			}
		}
		return m
	}
	x, y := sums(a), sums(b)
	var names []string
	for name, sum := range x {
		if y[name] != sum {
			names = append(names, name)
		}
	}
	for name := range y {
		if _, ok := x[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// explainDifference says what differs between two builds of one artifact, so
// that a failure in CI, whose dist/ is gone afterwards, names its cause: the
// archive entries whose header or content differ, the build settings of two
// binaries, or the first differing line of two SBOMs.
func explainDifference(t *testing.T, a, b string) string {
	t.Helper()
	switch {
	case strings.HasSuffix(a, ".tar.gz"):
		x, y := readTarGz(t, a), readTarGz(t, b)
		var diffs []string
		for name, fx := range x {
			fy, ok := y[name]
			switch {
			case !ok:
				diffs = append(diffs, name+" only in the first")
			case !bytes.Equal(fx.data, fy.data):
				diffs = append(diffs, fmt.Sprintf("%s: content (%d vs %d bytes)", name, len(fx.data), len(fy.data)))
			default:
				hx, hy := fx.header, fy.header
				if hx.Mode != hy.Mode || hx.Uid != hy.Uid || hx.Gid != hy.Gid || hx.Uname != hy.Uname || hx.Gname != hy.Gname || !hx.ModTime.Equal(hy.ModTime) || hx.Typeflag != hy.Typeflag {
					diffs = append(diffs, fmt.Sprintf("%s: header %+v vs %+v", name, hx, hy))
				}
			}
		}
		for name := range y {
			if _, ok := x[name]; !ok {
				diffs = append(diffs, name+" only in the second")
			}
		}
		if len(diffs) == 0 {
			if ox, oy := entryOrder(x), entryOrder(y); ox != oy {
				return fmt.Sprintf("the same entries in another order: %s vs %s", ox, oy)
			}
			return "the same entries, headers, contents and order: the tar or gzip framing differs"
		}
		sort.Strings(diffs)
		return strings.Join(diffs, "; ")
	case strings.HasSuffix(a, ".json"):
		x, _ := os.ReadFile(a)
		y, _ := os.ReadFile(b)
		lx, ly := strings.Split(string(x), "\n"), strings.Split(string(y), "\n")
		for i := 0; i < len(lx) && i < len(ly); i++ {
			if lx[i] != ly[i] {
				return fmt.Sprintf("line %d: %q vs %q", i+1, lx[i], ly[i])
			}
		}
		return fmt.Sprintf("%d vs %d lines", len(lx), len(ly))
	default:
		info := func(path string) string {
			out, err := exec.Command("go", "version", "-m", path).CombinedOutput()
			if err != nil {
				return fmt.Sprintf("go version -m: %v: %s", err, out)
			}
			// The first line names the file, which differs by design.
			_, rest, _ := strings.Cut(string(out), "\n")
			return rest
		}
		x, y := info(a), info(b)
		if x == y {
			bx, _ := os.ReadFile(a)
			by, _ := os.ReadFile(b)
			at := 0
			for at < len(bx) && at < len(by) && bx[at] == by[at] {
				at++
			}
			return fmt.Sprintf("the same build settings and modules (go version -m); %d vs %d bytes, first difference at byte %d", len(bx), len(by), at)
		}
		return fmt.Sprintf("build info differs:\n%s\n---\n%s", x, y)
	}
}

func readTarGz(t *testing.T, path string) map[string]tarFile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tr := tar.NewReader(gz)
	files := map[string]tarFile{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %s: %v", path, h.Name, err)
		}
		files[h.Name] = tarFile{data: data, mode: h.FileInfo().Mode(), header: *h, index: len(files)}
	}
}

// configBinaries lists the binaries of .goreleaser.yaml's builds, in order.
func configBinaries(t *testing.T) string {
	t.Helper()
	cfg, err := os.ReadFile("../.goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s+binary: (\S+)$`).FindAllSubmatch(cfg, -1) {
		names = append(names, string(m[1]))
	}
	return strings.Join(names, ",")
}

// binaryOrder keeps, of an archive's entries in order, the binaries.
func binaryOrder(entries string, binaries map[string]string) string {
	var names []string
	for _, e := range strings.Split(entries, ",") {
		if _, ok := binaries[e]; ok {
			names = append(names, e)
		}
	}
	return strings.Join(names, ",")
}

// entryOrder lists an archive's entries (readTarGz) in the order it holds
// them.
func entryOrder(files map[string]tarFile) string {
	names := slices.SortedFunc(maps.Keys(files), func(a, b string) int { return files[a].index - files[b].index })
	return strings.Join(names, ",")
}

// checkELF: a static Linux executable for arch (CGO off: no interpreter).
func checkELF(t *testing.T, name string, data []byte, arch string) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if f.Machine != want {
		t.Errorf("%s: machine %v, want %v", name, f.Machine, want)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s: dynamically linked (has an interpreter): CGO was on", name)
		}
	}
}

type sbomComponent struct {
	Name     string `json:"name"`
	Version  string `json:"version"`
	Purl     string `json:"purl"`
	Pedigree *struct {
		Patches []struct {
			Type string `json:"type"`
			Diff struct {
				URL string `json:"url"`
			} `json:"diff"`
		} `json:"patches"`
	} `json:"pedigree"`
}

func readSBOM(t *testing.T, path string) map[string]sbomComponent {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var bom struct {
		BOMFormat   string          `json:"bomFormat"`
		SpecVersion string          `json:"specVersion"`
		Components  []sbomComponent `json:"components"`
		Metadata    struct {
			Component sbomComponent `json:"component"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &bom); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if bom.BOMFormat != "CycloneDX" || bom.SpecVersion == "" {
		t.Errorf("%s: bomFormat %q specVersion %q, want CycloneDX", path, bom.BOMFormat, bom.SpecVersion)
	}
	if bom.Metadata.Component.Version != buildinfo.Release {
		t.Errorf("%s: describes %s %s, want version %s", path, bom.Metadata.Component.Name, bom.Metadata.Component.Version, buildinfo.Release)
	}
	comps := map[string]sbomComponent{}
	for _, c := range bom.Components {
		comps[c.Name] = c
		if c.Version == "" || c.Purl == "" {
			t.Errorf("%s: component %s has no version or purl", path, c.Name)
		}
	}
	return comps
}
