package artifact_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
	"github.com/pdfexport/pdfexport/internal/storage/artifact"
)

func TestReadInfo(t *testing.T) {
	ctx := context.Background()
	store, err := storage.NewFile(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	written := artifact.Info{ETag: "e1", Pages: 7, Bytes: 1234, RenderMS: 55, Fence: 3, Renderer: "host-a",
		Warnings: []spec.Warning{{Kind: "resource", Message: "https://example.com/x.png: 404"}}, WarningsOmitted: 2}
	put := func(key string, body []byte) {
		t.Helper()
		if _, err := store.Create(ctx, key, bytes.NewReader(body), storage.PutOptions{FileName: "info.json"}); err != nil {
			t.Fatal(err)
		}
	}
	js, err := json.Marshal(written)
	if err != nil {
		t.Fatal(err)
	}
	put(artifact.InfoKey("m/1/a.pdf"), js)
	// A planted object under an info's name far over the bound: the reader
	// stops at MaxInfoBytes instead of buffering it.
	// It is valid JSON, so only the bound refuses it.
	big := append([]byte(`{"etag":"e1","pages":1,"renderer":"`), bytes.Repeat([]byte("x"), 2*artifact.MaxInfoBytes)...)
	put(artifact.InfoKey("m/1/big.pdf"), append(big, `"}`...))
	put(artifact.InfoKey("m/1/bad.pdf"), []byte("not json"))

	tests := []struct {
		name    string
		key     string
		want    artifact.Info
		wantErr func(error) bool
	}{
		{name: "round trip", key: "m/1/a.pdf", want: written},
		{name: "missing", key: "m/1/none.pdf", wantErr: func(err error) bool { return errors.Is(err, storage.ErrNotFound) }},
		{name: "over the bound", key: "m/1/big.pdf", wantErr: func(err error) bool { return err != nil && strings.Contains(err.Error(), "big.pdf.json") }},
		{name: "not JSON", key: "m/1/bad.pdf", wantErr: func(err error) bool { return err != nil && strings.Contains(err.Error(), "bad.pdf.json") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := artifact.ReadInfo(ctx, store, tt.key)
			if tt.wantErr != nil {
				if !tt.wantErr(err) {
					t.Fatalf("ReadInfo(%q) error = %v", tt.key, err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ReadInfo(%q) = %+v, %v; want %+v", tt.key, got, err, tt.want)
			}
		})
	}
}
