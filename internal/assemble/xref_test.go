package assemble

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestAssemble_XrefsKeptOrReadAgain: a manual whose parts' cross-references
// together pass maxKeptXrefEntries reads each again when it copies the
// part, and writes the same bytes as one that keeps them; a part whose
// file changed size since its analysis is read again too.
func TestAssemble_XrefsKeptOrReadAgain(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "chapter.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var parts []Part
	for i := range 3 {
		p := filepath.Join(dir, "part"+string(rune('a'+i))+".pdf")
		if err := os.WriteFile(p, src, 0o600); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, Part{Path: p, Chapter: i})
	}
	assembleWith := func(limit int) []byte {
		t.Helper()
		defer func(old int) { maxKeptXrefEntries = old }(maxKeptXrefEntries)
		maxKeptXrefEntries = limit
		var out bytes.Buffer
		if _, err := Assemble(context.Background(), &out, parts, Options{Outline: true}); err != nil {
			t.Fatal(err)
		}
		// The trailer's /ID is random; everything before it must match.
		b := out.Bytes()
		return b[:bytes.LastIndex(b, []byte("trailer"))]
	}
	kept, readAgain := assembleWith(1<<30), assembleWith(0)
	if !bytes.Equal(kept, readAgain) {
		t.Errorf("the manual differs when the cross-references are read again (%d and %d bytes)", len(kept), len(readAgain))
	}

	a, err := analyze(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(parts[0].Path, append(bytes.Clone(src), "\n% grown\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := reopenPDF(parts[0].Path, a.xref)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.size != int64(len(src))+int64(len("\n% grown\n")) {
		t.Errorf("reopened a grown file with its old cross-reference: size %d", r.size)
	}
}

// TestKeepXrefs: the parts keep their cross-references up to
// maxKeptXrefEntries together, and none past it.
func TestKeepXrefs(t *testing.T) {
	defer func(old int) { maxKeptXrefEntries = old }(maxKeptXrefEntries)
	for _, tc := range []struct {
		limit int
		kept  bool
	}{{9, true}, {8, false}, {0, false}} {
		maxKeptXrefEntries = tc.limit
		parts := []*analyzed{{xref: xref{offsets: make([]int64, 5)}}, {xref: xref{offsets: make([]int64, 4)}}}
		keepXrefs(parts)
		for i, a := range parts {
			if (a.xref.offsets != nil) != tc.kept {
				t.Errorf("limit %d: part %d kept its cross-reference: %v, want %v", tc.limit, i, a.xref.offsets != nil, tc.kept)
			}
		}
	}
}
