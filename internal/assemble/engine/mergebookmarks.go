package engine

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"

	"github.com/pdfcpu/pdfcpu/pkg/api"
)

// MergeOutline is how a merge's outline is made from its documents.
type MergeOutline struct {
	// List is the merged document's whole outline; it wins over the rest.
	List []Bookmark
	// ByName are outlines by the documents' names, in each document's own
	// page numbers (shifted to where it lands in the merge).
	ByName map[string][]Bookmark
	// AutoIndex keeps each document's own outline (when ByName has none
	// for it), shifted to where it lands.
	AutoIndex bool
	// Titles puts each document under an entry of its title (its Title,
	// else its file name without the extension), its outline beneath.
	Titles bool
}

// Empty reports whether o asks for no outline: the merge keeps none.
func (o MergeOutline) Empty() bool {
	return o.List == nil && o.ByName == nil && !o.AutoIndex && !o.Titles
}

// MergedOutline is the outline of files merged in order, as o asks.
func MergedOutline(ctx context.Context, files []File, o MergeOutline) ([]Bookmark, error) {
	if o.List != nil {
		return o.List, nil
	}
	var out []Bookmark
	offset := 0
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		own := o.ByName[f.Name]
		if len(own) == 0 && (o.AutoIndex || o.Titles) {
			read, err := ReadBookmarks(ctx, f.Data)
			if err != nil {
				return nil, &InputError{File: f.Name, Err: err}
			}
			own = read
		}
		own = shiftBookmarks(own, offset)
		if len(own) == 0 {
			own = nil // no children, rather than an empty list of them
		}
		switch {
		case o.Titles:
			out = append(out, Bookmark{Title: documentTitle(ctx, f), Page: offset + 1, Children: own})
		case len(own) > 0:
			out = append(out, own...)
		}
		n, err := api.PageCount(bytes.NewReader(f.Data), Conf())
		if err != nil {
			return nil, &InputError{File: f.Name, Err: err}
		}
		offset += n
	}
	if len(out) > 0 {
		if err := CheckBookmarks(out); err != nil {
			return nil, &InputError{Err: err}
		}
	}
	return out, nil
}

// documentTitle is f's Title, else its name without the extension.
func documentTitle(ctx context.Context, f File) string {
	if md, err := ReadMetadata(ctx, f.Data); err == nil {
		if t, ok := md["Title"].(string); ok && strings.TrimSpace(t) != "" {
			return t
		}
	}
	return strings.TrimSuffix(f.Name, filepath.Ext(f.Name))
}

func shiftBookmarks(bms []Bookmark, offset int) []Bookmark {
	if offset == 0 || len(bms) == 0 {
		return bms
	}
	out := make([]Bookmark, len(bms))
	for i, b := range bms {
		out[i] = Bookmark{Title: b.Title, Page: b.Page + offset, Children: shiftBookmarks(b.Children, offset)}
	}
	return out
}
