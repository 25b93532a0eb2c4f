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

// TestInspectAll_EachFileItsOwn: the files are read several at once, and
// each answer is that file's, in the order given: what Inspect reads of
// it, or its own error.
func TestInspectAll_EachFileItsOwn(t *testing.T) {
	good, notPDF, missing := partFiles(t, "<html>not a PDF</html>")
	want, err := assemble.Inspect(good)
	if err != nil {
		t.Fatal(err)
	}
	if want.Pages == 0 {
		t.Fatal("testdata/chapter.pdf has no pages")
	}
	paths := []string{good, notPDF, good, missing, good}
	infos, errs := assemble.InspectAll(paths)
	if len(infos) != len(paths) || len(errs) != len(paths) {
		t.Fatalf("%d infos and %d errors for %d files", len(infos), len(errs), len(paths))
	}
	for _, i := range []int{0, 2, 4} {
		if errs[i] != nil || !reflect.DeepEqual(infos[i], want) {
			t.Errorf("file %d: %+v, %v; want %+v", i, infos[i], errs[i], want)
		}
	}
	if !errors.Is(errs[1], assemble.ErrMalformed) {
		t.Errorf("not a PDF: %v, want ErrMalformed", errs[1])
	}
	if !errors.Is(errs[3], fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", errs[3])
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
