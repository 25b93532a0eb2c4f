package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
)

// Bookmark is an outline entry, in Gotenberg's JSON shape.
type Bookmark struct {
	Title    string     `json:"title"`
	Page     int        `json:"page"`
	Children []Bookmark `json:"children,omitempty"`
}

// Bounds of the outline a caller may write: every entry is an object in
// the PDF and a pass of pdfcpu's.
const (
	MaxBookmarks     = 10000
	MaxBookmarkDepth = 32
	MaxBookmarkTitle = 1024
)

// ReadBookmarks is the outline of pdf; a PDF without one has none (an
// empty list, not nil, so that it is [] in JSON).
func ReadBookmarks(ctx context.Context, pdf []byte) ([]Bookmark, error) {
	bms, err := api.Bookmarks(bytes.NewReader(pdf), Conf())
	if errors.Is(err, pdfcpu.ErrNoBookmarks) {
		return []Bookmark{}, nil
	}
	if err != nil {
		return nil, &InputError{Err: err}
	}
	return fromPdfcpu(bms), nil
}

func fromPdfcpu(bms []pdfcpu.Bookmark) []Bookmark {
	out := make([]Bookmark, 0, len(bms))
	for _, b := range bms {
		bm := Bookmark{Title: b.Title, Page: b.PageFrom}
		if len(b.Kids) > 0 {
			bm.Children = fromPdfcpu(b.Kids)
		}
		out = append(out, bm)
	}
	return out
}

// WriteBookmarksOptions configure WriteBookmarks.
type WriteBookmarksOptions struct {
	Bookmarks []Bookmark // replace the document's outline; none: pdf as is
}

// WriteBookmarks replaces the outline of pdf.
func WriteBookmarks(ctx context.Context, pdf []byte, opts WriteBookmarksOptions) ([]byte, error) {
	if len(opts.Bookmarks) == 0 {
		return pdf, nil
	}
	if err := CheckBookmarks(opts.Bookmarks); err != nil {
		return nil, &InputError{Err: err}
	}
	src, err := readPDF(pdf)
	if err != nil {
		return nil, &InputError{Err: err}
	}
	if err := pagesWithin(opts.Bookmarks, src.PageCount); err != nil {
		return nil, &InputError{Err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := pdfcpu.AddBookmarks(src, toPdfcpu(opts.Bookmarks), true); err != nil {
		return nil, &InputError{Err: err}
	}
	return writePDF(src)
}

// CheckBookmarks bounds an outline: its entries, depth and titles.
func CheckBookmarks(bms []Bookmark) error {
	n := 0
	var walk func(bms []Bookmark, depth int) error
	walk = func(bms []Bookmark, depth int) error {
		if depth > MaxBookmarkDepth {
			return fmt.Errorf("bookmarks nested deeper than %d", MaxBookmarkDepth)
		}
		for _, b := range bms {
			if n++; n > MaxBookmarks {
				return fmt.Errorf("more than %d bookmarks", MaxBookmarks)
			}
			if len(b.Title) > MaxBookmarkTitle || !utf8.ValidString(b.Title) {
				return fmt.Errorf("the bookmark title '%.40s…' is not valid UTF-8 of at most %d bytes", b.Title, MaxBookmarkTitle)
			}
			if err := walk(b.Children, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(bms, 1)
}

func pagesWithin(bms []Bookmark, count int) error {
	for _, b := range bms {
		if b.Page < 1 || b.Page > count {
			return fmt.Errorf("the bookmark '%s' is for page %d, the document has %d", b.Title, b.Page, count)
		}
		if err := pagesWithin(b.Children, count); err != nil {
			return err
		}
	}
	return nil
}

func toPdfcpu(bms []Bookmark) []pdfcpu.Bookmark {
	out := make([]pdfcpu.Bookmark, 0, len(bms))
	for _, b := range bms {
		out = append(out, pdfcpu.Bookmark{Title: b.Title, PageFrom: b.Page, Kids: toPdfcpu(b.Children)})
	}
	return out
}
