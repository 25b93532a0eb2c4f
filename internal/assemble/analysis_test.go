package assemble_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pdfexport/pdfexport/internal/assemble"
)

// TestAssemble_ReusesTheAnalysis: parts that Analyze read are not read
// for their analysis again. Once analyzed, each part's startxref is made
// unreadable (the file keeps its size): an Assemble given the analysis
// writes the manual the intact files make, one without it finds the
// damage.
func TestAssemble_ReusesTheAnalysis(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "chapter.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var parts []assemble.Part
	for i := range 3 {
		p := filepath.Join(dir, "part"+string(rune('a'+i))+".pdf")
		if err := os.WriteFile(p, src, 0o600); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, assemble.Part{Path: p, Chapter: i, Title: "Part " + string(rune('A'+i))})
	}
	opts := assemble.Options{Outline: true, Title: "Manual"}
	manual := func(opts assemble.Options) ([]byte, error) {
		var out bytes.Buffer
		_, err := assemble.Assemble(context.Background(), &out, parts, opts)
		// The trailer's /ID is random; everything before it must match.
		b := out.Bytes()
		if i := bytes.LastIndex(b, []byte("trailer")); i >= 0 {
			b = b[:i]
		}
		return b, err
	}
	want, err := manual(opts)
	if err != nil {
		t.Fatal(err)
	}

	an, _, err := assemble.Analyze(context.Background(), parts)
	if err != nil {
		t.Fatal(err)
	}
	damaged := bytes.Replace(src, []byte("startxref"), []byte("startXXXX"), 1)
	if len(damaged) != len(src) || bytes.Equal(damaged, src) {
		t.Fatal("testdata/chapter.pdf has no startxref to damage")
	}
	for _, p := range parts {
		if err := os.WriteFile(p.Path, damaged, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	opts.Analysis = an
	got, err := manual(opts)
	if err != nil {
		t.Fatalf("Assemble with the analysis read a part again: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the manual from the analysis differs (%d and %d bytes)", len(got), len(want))
	}
	opts.Analysis = nil
	if _, err := manual(opts); !errors.Is(err, assemble.ErrMalformed) {
		t.Errorf("Assemble without the analysis: %v, want ErrMalformed for the damaged parts", err)
	}
}
