package engine

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// tagged is pdf with a (minimal) structure tree.
func tagged(t *testing.T, pdf []byte) []byte {
	t.Helper()
	pc := readBack(t, pdf)
	root, err := pc.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	root["StructTreeRoot"] = types.Dict{"Type": types.Name("StructTreeRoot")}
	var out bytes.Buffer
	if err := api.WriteContext(pc, &out); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestConform(t *testing.T) {
	plain := testPDF("Alpha", "Beta")
	tests := []struct {
		name      string
		in        []byte
		opts      ConformOptions
		want, not []string // in the XMP packet
	}{
		{"1b", plain, ConformOptions{PDFA: "1b"}, []string{"<pdfaid:part>1</pdfaid:part>", "<pdfaid:conformance>B</pdfaid:conformance>"}, []string{"pdfuaid"}},
		{"2b", plain, ConformOptions{PDFA: "2b"}, []string{"<pdfaid:part>2</pdfaid:part>"}, []string{"pdfuaid"}},
		{"3b", plain, ConformOptions{PDFA: "3b"}, []string{"<pdfaid:part>3</pdfaid:part>"}, nil},
		{"2b+ua", tagged(t, plain), ConformOptions{PDFA: "2b", UA: true}, []string{"<pdfaid:part>2</pdfaid:part>", "<pdfuaid:part>1</pdfuaid:part>", "pdfaExtension:schemas"}, nil},
		{"ua", tagged(t, plain), ConformOptions{UA: true}, []string{"<pdfuaid:part>1</pdfuaid:part>"}, []string{"pdfaid", "pdfaExtension"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Conform(context.Background(), tt.in, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			pc := readBack(t, out)
			if pc.PageCount != 2 || !strings.Contains(pageContent(t, pc, 2), "Beta") {
				t.Fatalf("pages %d, page 2 %q", pc.PageCount, pageContent(t, pc, 2))
			}
			root, _ := pc.Catalog()
			xmp := string(readXMPBytes(t, pc, root))
			for _, s := range tt.want {
				if !strings.Contains(xmp, s) {
					t.Errorf("the XMP lacks %s:\n%s", s, xmp)
				}
			}
			for _, s := range tt.not {
				if strings.Contains(xmp, s) {
					t.Errorf("the XMP has %s", s)
				}
			}
			intents, _ := pc.DereferenceArray(root["OutputIntents"])
			if (tt.opts.PDFA != "") != (len(intents) == 1) {
				t.Errorf("output intents %v for %q", intents, tt.opts.PDFA)
			}
			if tt.opts.UA {
				mi, _ := pc.DereferenceDict(root["MarkInfo"])
				vp, _ := pc.DereferenceDict(root["ViewerPreferences"])
				if mi.BooleanEntry("Marked") == nil || vp.BooleanEntry("DisplayDocTitle") == nil {
					t.Errorf("MarkInfo %v, ViewerPreferences %v", mi, vp)
				}
			}
			if pc.Encrypt != nil {
				t.Error("encrypted")
			}
		})
	}
}

func TestConformRefuses(t *testing.T) {
	tests := []struct {
		name string
		opts ConformOptions
		is   error
	}{
		{"ua untagged", ConformOptions{UA: true}, ErrUntagged},
		{"level a", ConformOptions{PDFA: "2a"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Conform(context.Background(), testPDF("x"), tt.opts)
			var ie *InputError
			if !errors.As(err, &ie) || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Fatalf("err %v", err)
			}
		})
	}
}

// TestMetadataKeepsClaim checks that writing metadata after Conform keeps
// the identification, as a conversion's metadata step does.
func TestMetadataKeepsClaim(t *testing.T) {
	out, err := Conform(context.Background(), tagged(t, testPDF("x")), ConformOptions{PDFA: "3b", UA: true})
	if err != nil {
		t.Fatal(err)
	}
	out, err = WriteMetadata(context.Background(), out, MetadataOptions{Values: map[string]any{"Title": "T"}})
	if err != nil {
		t.Fatal(err)
	}
	pc := readBack(t, out)
	root, _ := pc.Catalog()
	xmp := string(readXMPBytes(t, pc, root))
	for _, s := range []string{"<pdfaid:part>3</pdfaid:part>", "<pdfuaid:part>1</pdfuaid:part>", ">T</rdf:li>"} {
		if !strings.Contains(xmp, s) {
			t.Errorf("the XMP lacks %s:\n%s", s, xmp)
		}
	}
}

func readXMPBytes(t *testing.T, pc interface {
	DereferenceStreamDict(types.Object) (*types.StreamDict, bool, error)
}, root types.Dict) []byte {
	t.Helper()
	sd, _, err := pc.DereferenceStreamDict(root["Metadata"])
	if err != nil || sd == nil {
		t.Fatalf("no XMP: %v", err)
	}
	if err := sd.Decode(); err != nil {
		t.Fatal(err)
	}
	return sd.Content
}
