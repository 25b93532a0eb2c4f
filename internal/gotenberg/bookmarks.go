package gotenberg

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/pdfexport/pdfexport/internal/assemble/engine"
)

// readBookmarksField reads bookmarks: a list written into every PDF, or
// lists by file name (a PDF not named keeps its outline).
func readBookmarksField(f *form) (list []engine.Bookmark, byName map[string][]engine.Bookmark) {
	v := f.value("bookmarks")
	if v == "" {
		f.errs = append(f.errs, "form field 'bookmarks' is required")
		return nil, nil
	}
	if err := json.Unmarshal([]byte(v), &list); err == nil {
		return list, nil
	}
	if err := json.Unmarshal([]byte(v), &byName); err != nil {
		f.invalid("bookmarks", v, fmt.Errorf("unmarshal bookmarks: %w", err))
		return nil, nil
	}
	return nil, byName
}

// writeBookmarksRoute is POST /forms/pdfengines/bookmarks/write.
func writeBookmarksRoute(f *form) engineJob {
	list, byName := readBookmarksField(f)
	for _, bms := range append([][]engine.Bookmark{list}, mapValues(byName)...) {
		if err := engine.CheckBookmarks(bms); err != nil {
			f.invalid("bookmarks", f.value("bookmarks"), err)
			break
		}
	}
	return func(ctx context.Context, _ *form, pdfs []upload) ([]upload, error) {
		out := make([]upload, 0, len(pdfs))
		for _, p := range pdfs {
			bms := list
			if byName != nil {
				bms = byName[p.name]
			}
			data, err := engine.WriteBookmarks(ctx, p.data, engine.WriteBookmarksOptions{Bookmarks: bms})
			if err != nil {
				return nil, pageErr(p.name, err)
			}
			out = append(out, upload{name: p.name, data: data})
		}
		return out, nil
	}
}

func mapValues(m map[string][]engine.Bookmark) [][]engine.Bookmark {
	var out [][]engine.Bookmark
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// readBookmarks is POST /forms/pdfengines/bookmarks/read: each PDF's
// outline by file name, [] for none.
func readBookmarks(ctx context.Context, _ *form, pdfs []upload) ([]upload, error) {
	all := map[string][]engine.Bookmark{}
	for _, p := range pdfs {
		bms, err := engine.ReadBookmarks(ctx, p.data)
		if err != nil {
			return nil, pageErr(p.name, err)
		}
		all[p.name] = bms
	}
	b, err := json.Marshal(all)
	if err != nil {
		return nil, err
	}
	return nil, &jsonAnswer{body: b}
}
