package export

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testsupport"
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
			func(_ context.Context, pdf io.Reader) error {
				b, err := io.ReadAll(pdf)
				if err != nil {
					return err
				}
				return os.WriteFile(path, b, 0o600)
			})
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
	path, _, err := spoolLimited(ws, bytes.NewReader(make([]byte, 1001)), 1000)
	if !errors.Is(err, errTooLargeToPostProcess) || path != "" {
		t.Fatalf("spool over the limit = %q, %v", path, err)
	}
	path, n, err := spoolLimited(ws, bytes.NewReader(make([]byte, 1000)), 1000)
	if err != nil || n != 1000 || filepath.Dir(path) != ws.Dir() {
		t.Fatalf("spool at the limit = %q, %d, %v; want a file in %s", path, n, err, ws.Dir())
	}
	_ = os.Remove(path)
	if left, _ := os.ReadDir(ws.Dir()); len(left) != 0 {
		t.Fatalf("spool files left: %v", left)
	}
}

// TestSpool_TempDirFailureIsAPathError: a private directory that cannot
// take the spool (gone, or a full TMPDIR) fails with a *fs.PathError,
// which the handler retries (the document is not at fault).
func TestSpool_TempDirFailureIsAPathError(t *testing.T) {
	ws := openWorkspace(t, t.TempDir())
	if err := os.RemoveAll(ws.Dir()); err != nil {
		t.Fatal(err)
	}
	_, _, err := spool(ws, bytes.NewReader([]byte("%PDF-")))
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		t.Fatalf("spool into a removed private directory = %v, want a *fs.PathError", err)
	}
}
