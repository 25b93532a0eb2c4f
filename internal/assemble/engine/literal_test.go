package engine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/font"

	"github.com/pdfexport/pdfexport/internal/testing/pdfcheck"
)

// TestLiteralText_StandInsAreAsWide: each stand-in is exactly as wide in
// Helvetica as what it stands for, so a literal mark is laid out as its
// text.
func TestLiteralText_StandInsAreAsWide(t *testing.T) {
	for _, s := range standIns {
		in, ierr := font.TextWidth(string(winAnsi(s.in)), "Helvetica", 1000)
		out, oerr := font.TextWidth(s.out, "Helvetica", 1000)
		if ierr != nil || oerr != nil || in != out {
			t.Errorf("%q is %v wide and its stand-in %v (%v, %v)", s.out, out, in, ierr, oerr)
		}
	}
}

// TestLiteralMark_DrawnAsTyped: a literal text mark shows its text as
// typed, on one line, where pdfcpu would format %p, %P, %t and %v, drop
// a percent sign of every run and break the line at \n. Read back with
// pdftotext.
func TestLiteralMark_DrawnAsTyped(t *testing.T) {
	if missing := pdfcheck.MissingPopplerTools(); len(missing) > 0 {
		t.Skipf("%v missing", missing)
	}
	ctx := context.Background()
	for _, text := range []string{`C:\new\notes`, `100%`, `50% off`, `page %p of %P`, `%t`, `%%t and %%%v`, `a\\nb 100%p`, `%`, `plain`} {
		t.Run(text, func(t *testing.T) {
			d, err := ReadDocument(ctx, bytes.NewReader(testPDF("body")), PrintedConf())
			if err != nil {
				t.Fatal(err)
			}
			m := Mark{Source: SourceText, Text: text, Literal: true, Options: map[string]string{"font": "Helvetica", "points": "12", "rot": "0"}}
			if err := d.AddMarks(ctx, []Mark{m}, true); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := d.Write(&out, true); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "m.pdf")
			if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := pdfcheck.Poppler{Path: path}.Text(ctx, pdfcheck.Raw, pdfcheck.AllPages, pdfcheck.AllPages)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(strings.Trim(got, "\f")), "\n")
			found := false
			for _, l := range lines {
				found = found || l == text
			}
			if !found {
				t.Errorf("pdftotext lines %q; want %q on one line", lines, text)
			}
		})
	}
}
