package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestSplit: intervals and page selections cut a document into parts
// named as Gotenberg names them, each with its pages in order.
func TestSplit(t *testing.T) {
	doc := numberedPDF(5)
	for _, tc := range []struct {
		name  string
		opts  SplitOptions
		parts map[string][]int // file name: the pages it shows
	}{
		{"intervals of 2", SplitOptions{Mode: SplitIntervals, Span: "2"}, map[string][]int{"doc_0.pdf": {1, 2}, "doc_1.pdf": {3, 4}, "doc_2.pdf": {5}}},
		{"one interval", SplitOptions{Mode: SplitIntervals, Span: "9"}, map[string][]int{"doc_0.pdf": {1, 2, 3, 4, 5}}},
		{"pages from 4", SplitOptions{Mode: SplitPages, Span: "4-"}, map[string][]int{"doc_0.pdf": {4}, "doc_1.pdf": {5}}},
		{"pages unified", SplitOptions{Mode: SplitPages, Span: "2-3, 5", Unify: true}, map[string][]int{"doc.pdf": {2, 3, 5}}},
		{"qpdf's z", SplitOptions{Mode: SplitPages, Span: "4-z", Unify: true}, map[string][]int{"doc.pdf": {4, 5}}},
		{"pdftk's end", SplitOptions{Mode: SplitPages, Span: "end", Unify: true}, map[string][]int{"doc.pdf": {5}}},
		{"past the end", SplitOptions{Mode: SplitPages, Span: "3-99", Unify: true}, map[string][]int{"doc.pdf": {3, 4, 5}}},
		{"all but 2", SplitOptions{Mode: SplitPages, Span: "1-,!2"}, map[string][]int{"doc_0.pdf": {1}, "doc_1.pdf": {3}, "doc_2.pdf": {4}, "doc_3.pdf": {5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Name = "doc.pdf"
			files, err := Split(context.Background(), doc, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range files {
				names = append(names, f.Name)
				want, ok := tc.parts[f.Name]
				if !ok {
					t.Fatalf("unexpected part %s", f.Name)
				}
				ctx := readBack(t, f.Data)
				if ctx.PageCount != len(want) {
					t.Fatalf("%s: %d pages, want %v", f.Name, ctx.PageCount, want)
				}
				for i, p := range want {
					if c := pageContent(t, ctx, i+1); !strings.Contains(c, fmt.Sprintf("(Page %d)", p)) {
						t.Errorf("%s page %d shows %q, want Page %d", f.Name, i+1, c, p)
					}
				}
			}
			if want := slices.Sorted(maps.Keys(tc.parts)); !slices.Equal(names, want) {
				t.Errorf("parts %v, want %v in order", names, want)
			}
		})
	}
}

// TestSplitRefusals: a span that does not parse, selects nothing or
// makes more parts than allowed is the caller's error, named.
func TestSplitRefusals(t *testing.T) {
	doc := numberedPDF(12)
	for _, tc := range []struct {
		name string
		opts SplitOptions
		want error
	}{
		{"syntax", SplitOptions{Mode: SplitPages, Span: "foo"}, ErrPageSelection},
		{"no page", SplitOptions{Mode: SplitPages, Span: "40-"}, ErrPageSelection},
		{"zero interval", SplitOptions{Mode: SplitIntervals, Span: "0"}, ErrPageSelection},
		{"too many intervals", SplitOptions{Mode: SplitIntervals, Span: "1", MaxParts: 10}, ErrTooManyParts},
		{"too many pages", SplitOptions{Mode: SplitPages, Span: "1-", MaxParts: 10}, ErrTooManyParts},
		{"too large", SplitOptions{Mode: SplitIntervals, Span: "1", MaxBytes: 2000}, ErrPartsTooLarge},
		{"too many ranges", SplitOptions{Mode: SplitPages, Span: strings.Repeat("1,", maxSelectionTokens) + "1"}, ErrPageSelection},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Name = "doc.pdf"
			_, err := Split(context.Background(), doc, tc.opts)
			var ie *InputError
			if !errors.As(err, &ie) || !errors.Is(err, tc.want) || ie.File != "doc.pdf" {
				t.Fatalf("%v, want an InputError for doc.pdf wrapping %v", err, tc.want)
			}
		})
	}
	if _, err := Split(context.Background(), []byte("%PDF-1.4 junk"), SplitOptions{Mode: SplitIntervals, Span: "1", Name: "x.pdf"}); !errors.As(err, new(*InputError)) {
		t.Errorf("an unreadable PDF: %v, want an InputError", err)
	}
}
