package engine

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/api"
)

// TestEmbed: files are attached under their names with their metadata,
// and the ones with metadata are the document's associated files.
func TestEmbed(t *testing.T) {
	files := []File{{Name: "invoice.xml", Data: []byte("<invoice/>")}, {Name: "notes.txt", Data: []byte("notes")}}
	out, err := Embed(context.Background(), numberedPDF(1), EmbedOptions{
		Files: files,
		Meta:  map[string]EmbedMeta{"invoice.xml": {MimeType: "text/xml", Relationship: "Alternative"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := api.Attachments(bytes.NewReader(out), Conf())
	if err != nil || len(got) != 2 {
		t.Fatalf("attachments %v %v, want 2", got, err)
	}
	ctx := readBack(t, out)
	root, _ := ctx.Catalog()
	af, _ := ctx.DereferenceArray(root["AF"])
	if len(af) != 1 {
		t.Fatalf("AF %v, want the invoice only", af)
	}
	spec, _ := ctx.DereferenceDict(af[0])
	if rel := spec.NameEntry("AFRelationship"); rel == nil || *rel != "Alternative" {
		t.Errorf("AFRelationship %v", rel)
	}
	ef, _ := ctx.DereferenceDict(spec["EF"])
	sd, _, _ := ctx.DereferenceStreamDict(ef["F"])
	if st := sd.NameEntry("Subtype"); st == nil || *st != "text/xml" {
		t.Errorf("the embedded file's Subtype is %v, want text/xml", st)
	}
}

// zipOf is a zip whose one entry claims size bytes, stored as data.
func zipOf(t *testing.T, data []byte, size uint64) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "x", Method: zip.Deflate, CompressedSize64: uint64(len(data)), UncompressedSize64: size})
	if err == nil {
		_, err = w.Write(data)
	}
	if err != nil || zw.Close() != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestEmbedRefusals: archives that unpack to too much, metadata for no
// file or with unknown values, too many files.
func TestEmbedRefusals(t *testing.T) {
	var zeros bytes.Buffer
	zw := zip.NewWriter(&zeros)
	w, _ := zw.Create("zeros")
	_, _ = w.Write(make([]byte, 4<<20))
	_ = zw.Close()
	var gz bytes.Buffer
	gw := gzip.NewWriter(&gz)
	_, _ = gw.Write(make([]byte, 4<<20))
	_ = gw.Close()
	var normal bytes.Buffer
	nw := zip.NewWriter(&normal)
	w, _ = nw.Create("photo")
	_, _ = w.Write(photo(200, 200, 3))
	_ = nw.Close()

	doc := numberedPDF(1)
	for _, tc := range []struct {
		name string
		opts EmbedOptions
		bomb bool
	}{
		{"declared huge", EmbedOptions{Files: []File{{Name: "a.zip", Data: zipOf(t, []byte{3, 0}, 1<<40)}}}, true},
		{"zip ratio", EmbedOptions{Files: []File{{Name: "a.zip", Data: zeros.Bytes()}}}, true},
		{"gzip ratio", EmbedOptions{Files: []File{{Name: "a.gz", Data: gz.Bytes()}}}, true},
		{"meta for no file", EmbedOptions{Files: []File{{Name: "a.xml"}}, Meta: map[string]EmbedMeta{"b.xml": {MimeType: "text/xml"}}}, false},
		{"bad relationship", EmbedOptions{Files: []File{{Name: "a.xml"}}, Meta: map[string]EmbedMeta{"a.xml": {Relationship: "Friend"}}}, false},
		{"bad mime type", EmbedOptions{Files: []File{{Name: "a.xml"}}, Meta: map[string]EmbedMeta{"a.xml": {MimeType: "text"}}}, false},
		{"too many", EmbedOptions{Files: make([]File, MaxEmbeds+1)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Embed(context.Background(), doc, tc.opts)
			if !errors.As(err, new(*InputError)) || errors.Is(err, ErrArchiveBomb) != tc.bomb {
				t.Fatalf("%v, want an InputError (a bomb: %v)", err, tc.bomb)
			}
		})
	}
	if _, err := Embed(context.Background(), doc, EmbedOptions{Files: []File{{Name: "photo.zip", Data: normal.Bytes()}}}); err != nil {
		t.Errorf("an ordinary zip: %v", err)
	}
}
