package storage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFile_StatRemembersSidecarsPerDataFile: a second Stat of an unchanged
// object answers from the remembered sidecar (it is found even once the
// sidecar file is gone), and a Replace, a new data file, is seen at once:
// the new ETag and metadata, never the remembered ones.
func TestFile_StatRemembersSidecarsPerDataFile(t *testing.T) {
	dir := t.TempDir()
	f, err := NewFile(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	first, err := f.Create(ctx, "m/1/a.pdf", strings.NewReader("one"), PutOptions{Metadata: map[string]string{"version": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if obj, err := f.Stat(ctx, "m/1/a.pdf"); err != nil || obj.ETag != first.ETag {
		t.Fatalf("stat: %+v %v", obj, err)
	}
	sidecarPath := filepath.Join(dir, metaDir, "m", "1", "a.pdf.json")
	saved, err := os.ReadFile(sidecarPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(sidecarPath); err != nil {
		t.Fatal(err)
	}
	obj, err := f.Stat(ctx, "m/1/a.pdf")
	if err != nil || obj.ETag != first.ETag || obj.Metadata["version"] != "1" {
		t.Fatalf("stat without the sidecar file: %+v %v, want the remembered one", obj, err)
	}
	obj.Metadata["version"] = "changed by a caller"
	if err := os.WriteFile(sidecarPath, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	second, err := f.Replace(ctx, "m/1/a.pdf", first.ETag, strings.NewReader("two, longer"), PutOptions{Metadata: map[string]string{"version": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	obj, err = f.Stat(ctx, "m/1/a.pdf")
	if err != nil || obj.ETag != second.ETag || obj.ETag == first.ETag || obj.Metadata["version"] != "2" {
		t.Fatalf("stat after Replace: %+v %v, want etag %s and version 2", obj, err, second.ETag)
	}
	other, err := f.Stat(ctx, "m/1/a.pdf")
	if err != nil || other.Metadata["version"] != "2" {
		t.Errorf("a caller's change of the metadata map reached another: %+v %v", other, err)
	}
}
