package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pdfexport/pdfexport/internal/testing/pdfcheck"
)

// popplerText is the text of page (from 1) of pdf, read by pdftotext.
func popplerText(t *testing.T, pdf []byte, page int) string {
	t.Helper()
	if missing := pdfcheck.MissingPopplerTools(); len(missing) > 0 {
		t.Skipf("%v missing", missing)
	}
	path := filepath.Join(t.TempDir(), "out.pdf")
	if err := os.WriteFile(path, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	text, err := pdfcheck.Poppler{Path: path}.Text(context.Background(), pdfcheck.Raw, page, page)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// TestMarks: text, image and PDF marks land on the pages selected, on top
// (stamps) or beneath (watermarks), several in one call in order.
func TestMarks(t *testing.T) {
	ctx := context.Background()
	doc := testPDF("Page one", "Page two", "Page three")
	unrotated := map[string]string{"rotation": "0", "scale": "0.2 abs", "position": "tl"}
	tests := []struct {
		name  string
		op    func(context.Context, []byte, []Mark) ([]byte, error)
		marks []Mark
		want  map[int][]string // page -> texts it holds
		not   map[int][]string
	}{
		{"stamp text on pages 1-2", stampMarks, []Mark{{Source: SourceText, Text: "STAMPED", Pages: "1-2", Options: unrotated}},
			map[int][]string{1: {"STAMPED", "Page one"}, 2: {"STAMPED"}}, map[int][]string{3: {"STAMPED"}}},
		{"two watermarks in order", watermarkMarks, []Mark{
			{Source: SourceText, Text: "MARKONE", Options: unrotated},
			{Source: SourceText, Text: "MARKTWO", Options: map[string]string{"rotation": "0", "position": "br", "scale": "0.2 abs"}},
		}, map[int][]string{1: {"MARKONE", "MARKTWO"}, 3: {"MARKONE", "MARKTWO"}}, nil},
		{"a PDF's pages stamped onto the document's", stampMarks, []Mark{{Source: SourcePDF, File: testPDF("OVERLAY")}},
			map[int][]string{1: {"OVERLAY", "Page one"}}, nil},
		{"an image and a text", stampMarks, []Mark{{Source: SourceImage, File: testPNG(t)}, {Source: SourceText, Text: "AFTER", Options: unrotated}},
			map[int][]string{2: {"AFTER", "Page two"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tt.op(ctx, doc, tt.marks)
			if err != nil {
				t.Fatal(err)
			}
			for page, texts := range tt.want {
				got := popplerText(t, out, page)
				for _, w := range texts {
					if !strings.Contains(got, w) {
						t.Errorf("page %d: %q not in %q", page, w, got)
					}
				}
			}
			for page, texts := range tt.not {
				got := popplerText(t, out, page)
				for _, w := range texts {
					if strings.Contains(got, w) {
						t.Errorf("page %d: %q in %q", page, w, got)
					}
				}
			}
		})
	}
}

func stampMarks(ctx context.Context, pdf []byte, m []Mark) ([]byte, error) {
	return Stamp(ctx, pdf, StampOptions{Marks: m})
}

func watermarkMarks(ctx context.Context, pdf []byte, m []Mark) ([]byte, error) {
	return Watermark(ctx, pdf, WatermarkOptions{Marks: m})
}

// TestMarkErrors: a mark that cannot be drawn is the caller's error,
// naming the mark and its part, before the document is touched.
func TestMarkErrors(t *testing.T) {
	doc := testPDF("Page one")
	tests := []struct {
		name  string
		marks []Mark
		index int
		part  Part
	}{
		{"unknown source", []Mark{{Source: "video"}}, 0, PartSource},
		{"empty text", []Mark{{Source: SourceText, Text: "ok"}, {Source: SourceText, Text: " "}}, 1, PartText},
		{"not an image", []Mark{{Source: SourceImage, File: []byte("no")}}, 0, PartFile},
		{"not a PDF", []Mark{{Source: SourcePDF, File: []byte("%PDF-1.4 no")}}, 0, PartFile},
		{"bad pages", []Mark{{Source: SourceText, Text: "x", Pages: "a-b-c"}}, 0, PartPages},
		{"unknown option", []Mark{{Source: SourceText, Text: "x", Options: map[string]string{"colour": "red"}}}, 0, PartOptions},
		{"option with a colon", []Mark{{Source: SourceText, Text: "x", Options: map[string]string{"fontname": "a:b"}}}, 0, PartOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Stamp(context.Background(), doc, StampOptions{Marks: tt.marks})
			var ie *InputError
			var me *MarkError
			if !errors.As(err, &ie) || !errors.As(err, &me) {
				t.Fatalf("err = %v, want an *InputError with a *MarkError", err)
			}
			if me.Index != tt.index || me.Part != tt.part {
				t.Errorf("mark %d part %s, want %d %s (%v)", me.Index, me.Part, tt.index, tt.part, err)
			}
		})
	}
	many := make([]Mark, MaxMarks+1)
	for i := range many {
		many[i] = Mark{Source: SourceText, Text: "x"}
	}
	if _, err := Stamp(context.Background(), doc, StampOptions{Marks: many}); err == nil {
		t.Errorf("%d marks accepted", len(many))
	}
}
