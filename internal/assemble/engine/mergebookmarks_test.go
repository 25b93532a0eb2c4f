package engine

import (
	"context"
	"reflect"
	"testing"

	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

func TestMergedOutline(t *testing.T) {
	ctx := context.Background()
	withOutline, err := WriteBookmarks(ctx, testsupport.NumberedPDF(2), WriteBookmarksOptions{Bookmarks: []Bookmark{{Title: "Own", Page: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	files := []File{{Name: "a.pdf", Data: testsupport.NumberedPDF(3)}, {Name: "b.pdf", Data: withOutline}}
	for _, tc := range []struct {
		name string
		o    MergeOutline
		want []Bookmark
	}{
		{"a list as it is", MergeOutline{List: []Bookmark{{Title: "L", Page: 5}}}, []Bookmark{{Title: "L", Page: 5}}},
		{"by name, shifted", MergeOutline{ByName: map[string][]Bookmark{"b.pdf": {{Title: "B1", Page: 1}}}},
			[]Bookmark{{Title: "B1", Page: 4}}},
		{"each document's own, shifted", MergeOutline{AutoIndex: true}, []Bookmark{{Title: "Own", Page: 5}}},
		{"titles over their outlines", MergeOutline{Titles: true},
			[]Bookmark{{Title: "a", Page: 1}, {Title: "b", Page: 4, Children: []Bookmark{{Title: "Own", Page: 5}}}}},
		{"by name wins over a document's own", MergeOutline{AutoIndex: true, ByName: map[string][]Bookmark{"b.pdf": {{Title: "Named", Page: 2}}}},
			[]Bookmark{{Title: "Named", Page: 5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MergedOutline(ctx, files, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("outline %+v, want %+v", got, tc.want)
			}
		})
	}
	if !(MergeOutline{}).Empty() || (MergeOutline{Titles: true}).Empty() {
		t.Error("Empty misreads an outline request")
	}
}
