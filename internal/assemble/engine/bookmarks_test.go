package engine

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestBookmarks: an outline written reads back the same, nested; a PDF
// without one reads as an empty list; a bookmark for a page the document
// lacks, or an outline past the bounds, is refused.
func TestBookmarks(t *testing.T) {
	ctx := context.Background()
	doc := numberedPDF(3)
	none, err := ReadBookmarks(ctx, doc)
	if err != nil || none == nil || len(none) != 0 {
		t.Fatalf("a PDF without outline: %v %v, want an empty list", none, err)
	}
	want := []Bookmark{
		{Title: "Index", Page: 1, Children: []Bookmark{{Title: "Sub-index", Page: 2}}},
		{Title: "Énd", Page: 3},
	}
	out, err := WriteBookmarks(ctx, doc, WriteBookmarksOptions{Bookmarks: want})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadBookmarks(ctx, out)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %+v %v, want %+v", got, err, want)
	}
	again, err := WriteBookmarks(ctx, out, WriteBookmarksOptions{Bookmarks: []Bookmark{{Title: "Only", Page: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := ReadBookmarks(ctx, again); !reflect.DeepEqual(got, []Bookmark{{Title: "Only", Page: 2}}) {
		t.Errorf("a second write gives %+v, want it to replace the outline", got)
	}

	deep := []Bookmark{{Title: "d", Page: 1}}
	for range MaxBookmarkDepth {
		deep = []Bookmark{{Title: "d", Page: 1, Children: deep}}
	}
	for name, bms := range map[string][]Bookmark{
		"page past the end": {{Title: "x", Page: 4}},
		"page 0":            {{Title: "x", Page: 0, Children: nil}},
		"too deep":          deep,
		"long title":        {{Title: strings.Repeat("x", MaxBookmarkTitle+1), Page: 1}},
	} {
		if _, err := WriteBookmarks(ctx, doc, WriteBookmarksOptions{Bookmarks: bms}); !errors.As(err, new(*InputError)) {
			t.Errorf("%s: %v, want an InputError", name, err)
		}
	}
}
