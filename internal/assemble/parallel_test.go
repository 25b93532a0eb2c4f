package assemble_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pdfexport/pdfexport/internal/assemble"
)

// TestAnalyze_EachFileItsOwn: the files are read several at once, and
// each answer is that file's, in the order given (what Inspect reads of
// it); a bad file's error names the first bad part and wraps its cause.
func TestAnalyze_EachFileItsOwn(t *testing.T) {
	good, notPDF, missing := partFiles(t, "<html>not a PDF</html>")
	want, err := assemble.Inspect(good)
	if err != nil {
		t.Fatal(err)
	}
	if want.Pages == 0 {
		t.Fatal("testdata/chapter.pdf has no pages")
	}
	parts := func(paths ...string) []assemble.Part {
		var ps []assemble.Part
		for i, p := range paths {
			ps = append(ps, assemble.Part{Path: p, Chapter: i})
		}
		return ps
	}
	an, infos, err := assemble.Analyze(context.Background(), parts(good, good, good))
	if err != nil || an == nil {
		t.Fatalf("Analyze: %v", err)
	}
	if len(infos) != 3 {
		t.Fatalf("%d infos for 3 files", len(infos))
	}
	for i, info := range infos {
		if !reflect.DeepEqual(info, want) {
			t.Errorf("file %d: %+v; want %+v", i, info, want)
		}
	}
	for _, tc := range []struct {
		paths []string
		part  int
		cause error
	}{
		{[]string{good, notPDF, good, missing}, 1, assemble.ErrMalformed},
		{[]string{good, good, missing, notPDF}, 2, fs.ErrNotExist},
	} {
		_, _, err := assemble.Analyze(context.Background(), parts(tc.paths...))
		var pe *assemble.PartError
		if !errors.As(err, &pe) || pe.Part != tc.part || !errors.Is(err, tc.cause) {
			t.Errorf("Analyze(%v): %v, want part %d's %v", tc.paths, err, tc.part, tc.cause)
		}
	}
}

// TestAssemble_NamesTheFirstBadPart: the parts are analyzed several at
// once, yet the error is the first bad part's, whichever failed first.
func TestAssemble_NamesTheFirstBadPart(t *testing.T) {
	good, notPDF, missing := partFiles(t, "%PDF-1.4\nno cross-reference")
	parts := []assemble.Part{{Path: good, Chapter: 0}, {Path: good, Chapter: 1}, {Path: notPDF, Chapter: 2},
		{Path: missing, Chapter: 3}, {Path: good, Chapter: 4}}
	_, err := assemble.Assemble(context.Background(), io.Discard, parts, assemble.Options{Outline: true})
	if !errors.Is(err, assemble.ErrMalformed) || !strings.HasPrefix(err.Error(), "part 2:") {
		t.Errorf("Assemble: %v, want part 2's ErrMalformed", err)
	}
}

// partFiles returns the paths of a good part (testdata/chapter.pdf), of a
// file holding notPDF, and of a file that does not exist.
func partFiles(t *testing.T, notPDF string) (good, bad, missing string) {
	t.Helper()
	dir := t.TempDir()
	bad = filepath.Join(dir, "not.pdf")
	if err := os.WriteFile(bad, []byte(notPDF), 0o600); err != nil {
		t.Fatal(err)
	}
	return filepath.Join("testdata", "chapter.pdf"), bad, filepath.Join(dir, "missing.pdf")
}
