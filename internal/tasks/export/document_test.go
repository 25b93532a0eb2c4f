package export

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestPostProcess_RefusesToLoseWhatWasPrinted: when the document would
// leave post-processing without the pages, tags or outline the export
// asked for, it fails naming what, and writes nothing; a PDF that has them
// passes. The PDFs are real Chromium prints.
func TestPostProcess_RefusesToLoseWhatWasPrinted(t *testing.T) {
	r, err := render.New(render.Config{ChromiumPath: testsupport.ChromiumPath(t), Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	dir := t.TempDir()
	print := func(name string, o spec.Options) (string, int) {
		path := filepath.Join(dir, name)
		st, err := r.Render(context.Background(), render.Source{HTML: "<h1>One</h1><p style='break-after:page'>a</p><h1>Two</h1>"}, o.Settings(),
			testsupport.FileSink(path))
		if err != nil {
			t.Fatal(err)
		}
		return path, st.Pages
	}
	plain, pages := print("plain.pdf", spec.Options{})
	outlined, _ := print("outline.pdf", spec.Options{Outline: true})
	d := (spec.Options{Watermark: &spec.Watermark{Text: "DRAFT"}}).Settings().Document
	for _, tc := range []struct {
		name string
		in   string
		k    keep
		lost string // "" for success
	}{
		{"tags and outline kept", outlined, keep{pages: pages, tagged: true, outline: true}, ""},
		{"untagged asked to keep tags", plain, keep{pages: pages, tagged: true}, "tagging (StructTreeRoot, MarkInfo)"},
		{"no outline asked to keep one", plain, keep{pages: pages, outline: true}, "the outline"},
		{"pages", plain, keep{pages: pages + 1}, "pages (2 of 3 left)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".out")
			o, err := os.OpenFile(out, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			err = postProcess(context.Background(), tc.in, o, d, spec.Passwords{}, tc.k)
			if cerr := o.Close(); cerr != nil {
				t.Fatal(cerr)
			}
			if tc.lost == "" {
				if err != nil {
					t.Fatal(err)
				}
				f, err := os.Open(out)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				// A reuser without the artifact's info object counts
				// the pages itself.
				if n, err := render.CountPages(f); err != nil || n != pages {
					t.Fatalf("CountPages of the post-processed PDF = %d, %v; want %d", n, err, pages)
				}
				return
			}
			if !errors.Is(err, ErrPostProcess) || !strings.Contains(err.Error(), "would lose "+tc.lost) {
				t.Fatalf("err = %v, want ErrPostProcess naming %s", err, tc.lost)
			}
			if fi, err := os.Stat(out); err != nil || fi.Size() != 0 {
				t.Fatalf("an output was written: %d bytes, %v", fi.Size(), err)
			}
		})
	}
}

// TestSpool_Limit: a PDF over the post-processing limit is refused before
// it is processed, and its spool file removed.
func TestSpool_Limit(t *testing.T) {
	ws := openWorkspace(t, t.TempDir())
	path, _, err := spoolLimited(ws, bytes.NewReader(make([]byte, 1001)), 1000, errTooLargeToPostProcess)
	if !errors.Is(err, errTooLargeToPostProcess) || path != "" {
		t.Fatalf("spool over the limit = %q, %v", path, err)
	}
	path, n, err := spoolLimited(ws, bytes.NewReader(make([]byte, 1000)), 1000, errTooLargeToPostProcess)
	if err != nil || n != 1000 || filepath.Dir(path) != ws.Dir() {
		t.Fatalf("spool at the limit = %q, %d, %v; want a file in %s", path, n, err, ws.Dir())
	}
	_ = os.Remove(path)
	if left, _ := os.ReadDir(ws.Dir()); len(left) != 0 {
		t.Fatalf("spool files left: %v", left)
	}
}

// TestSpool_PrivateDirectoryRemovedUnderneath: a private directory that a
// TMPDIR cleaner removed is made again (0700, locked) for the next spool;
// one that cannot be made again (TMPDIR gone too) fails with a
// *fs.PathError, which the handler retries (the document is not at fault),
// and one someone else made first is refused, never written into.
func TestSpool_PrivateDirectoryRemovedUnderneath(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after func(t *testing.T, ws *Workspace, parent string) // after the directory was removed
		ok    bool
	}{
		{"made again", func(*testing.T, *Workspace, string) {}, true},
		{"TMPDIR gone too", func(t *testing.T, _ *Workspace, parent string) {
			if err := os.RemoveAll(parent); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"made first by someone else", func(t *testing.T, ws *Workspace, _ string) {
			if err := os.Mkdir(ws.Dir(), 0o777); err != nil { // another user's would not be this uid's either
				t.Fatal(err)
			}
			if err := os.Chmod(ws.Dir(), 0o777); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := filepath.Join(t.TempDir(), "tmp")
			if err := os.Mkdir(parent, 0o700); err != nil {
				t.Fatal(err)
			}
			ws := openWorkspace(t, parent)
			if err := os.RemoveAll(ws.Dir()); err != nil {
				t.Fatal(err)
			}
			tc.after(t, ws, parent)
			path, _, err := spool(ws, bytes.NewReader([]byte("%PDF-")), nil)
			if !tc.ok {
				var pe *fs.PathError
				if err == nil || (!errors.As(err, &pe) && !errors.Is(err, errForeignDir)) {
					t.Fatalf("spool = %q, %v; want a *fs.PathError or a refusal", path, err)
				}
				if left, _ := os.ReadDir(ws.Dir()); len(left) != 0 {
					t.Fatalf("written into a directory not the worker's: %v", left)
				}
				return
			}
			if err != nil || filepath.Dir(path) != ws.Dir() {
				t.Fatalf("spool = %q, %v; want a file in %s", path, err, ws.Dir())
			}
			if fi, err := os.Lstat(ws.Dir()); err != nil || fi.Mode().Perm() != 0o700 {
				t.Fatalf("the directory made again: %v, %v", fi.Mode(), err)
			}
			// Locked again: another worker's sweep leaves it.
			other := openWorkspace(t, parent)
			<-other.swept
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("another worker's sweep removed the directory made again: %v", err)
			}
		})
	}
}

// TestPostProcess_WatermarkBackslashesAsTyped: a watermark text holding
// `\n` (a Windows path, a regular expression) is drawn as typed, on one
// line: pdfcpu would break the line there (engine's literal marks).
// Checked with pdftotext on a real Chromium print.
func TestPostProcess_WatermarkBackslashesAsTyped(t *testing.T) {
	for _, bin := range []string{"pdftotext", "qpdf"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is missing (make setup installs poppler-utils and qpdf)", bin)
		}
	}
	r, err := render.New(render.Config{ChromiumPath: testsupport.ChromiumPath(t), Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pdf")
	st, err := r.Render(context.Background(), render.Source{HTML: "<p>page</p>"}, spec.Options{}.Settings(), func(_ context.Context, pdf io.Reader) error {
		b, err := io.ReadAll(pdf)
		if err != nil {
			return err
		}
		return os.WriteFile(in, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{`C:\new\notes`, `a\\nb 100%`, `\n`, `plain`} {
		t.Run(text, func(t *testing.T) {
			angle := 0.0
			d := (spec.Options{Watermark: &spec.Watermark{Text: text, Angle: &angle}}).Settings().Document
			var out bytes.Buffer
			if err := postProcess(context.Background(), in, &out, d, spec.Passwords{}, keep{pages: st.Pages}); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "out.pdf")
			if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := exec.Command("pdftotext", "-raw", path, "-").Output()
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(got)), "\n")
			if !slices.Contains(lines, text) {
				t.Fatalf("pdftotext lines %q; want the watermark %q on one line", lines, text)
			}
			if out, err := exec.Command("qpdf", "--check", path).CombinedOutput(); err != nil {
				t.Fatalf("qpdf --check: %v\n%s", err, out)
			}
		})
	}
}
