package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
)

// The split modes: parts of so many pages each, or the pages of a
// selection.
const (
	SplitIntervals = "intervals"
	SplitPages     = "pages"
)

// MaxSplitParts bounds the PDFs one split makes: each is a whole document
// in memory and in the answer.
const MaxSplitParts = 1000

// ErrPageSelection is a page selection that does not parse.
var ErrPageSelection = errors.New("invalid page selection")

// ErrTooManyParts is a split into more than its MaxParts PDFs.
var ErrTooManyParts = errors.New("too many parts")

// ErrPartsTooLarge is a split whose parts together pass its MaxBytes:
// each part carries the resources its pages share with the others, so
// many parts of a document with large shared resources are many times
// its size.
var ErrPartsTooLarge = errors.New("the parts are too large")

// SplitOptions configure Split.
type SplitOptions struct {
	Mode string // SplitIntervals or SplitPages
	// Span is, for SplitIntervals, the pages per part; for SplitPages, a
	// page selection: "1-3,5", "2-", "-4", "l" (the last page; qpdf's "z"
	// and pdftk's "end" too), "even", "odd", "!2" (all but page 2).
	Span string
	// Unify makes SplitPages one PDF of the selected pages, not one per
	// page.
	Unify bool
	// Name is the input's file name: the parts are <stem>_<i>.pdf from
	// 0, a unified PDF <stem>.pdf, as Gotenberg names them.
	Name string
	// MaxParts bounds the parts; 0 is MaxSplitParts.
	MaxParts int
	// MaxBytes bounds the parts' bytes together; 0: no bound.
	MaxBytes int64
}

// Split cuts pdf into parts, in page order.
func Split(ctx context.Context, pdf []byte, opts SplitOptions) ([]File, error) {
	if opts.MaxParts <= 0 {
		opts.MaxParts = MaxSplitParts
	}
	src, err := readPDF(pdf)
	if err != nil {
		return nil, &InputError{File: opts.Name, Err: err}
	}
	parts, err := splitParts(src.PageCount, opts)
	if err != nil {
		return nil, &InputError{File: opts.Name, Err: err}
	}
	stem := strings.TrimSuffix(opts.Name, path.Ext(opts.Name))
	out := make([]File, 0, len(parts))
	var total int64
	for i, pages := range parts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		data, err := extractPages(src, pages)
		if err != nil {
			return nil, &InputError{File: opts.Name, Err: err}
		}
		if total += int64(len(data)); opts.MaxBytes > 0 && total > opts.MaxBytes {
			return nil, &InputError{File: opts.Name, Err: fmt.Errorf("%w: more than %d bytes after %d of %d parts", ErrPartsTooLarge, opts.MaxBytes, i+1, len(parts))}
		}
		name := fmt.Sprintf("%s_%d.pdf", stem, i)
		if opts.Mode == SplitPages && opts.Unify {
			name = stem + ".pdf"
		}
		out = append(out, File{Name: name, Data: data})
	}
	return out, nil
}

// splitParts are the page numbers of each part of a document of count
// pages.
func splitParts(count int, opts SplitOptions) ([][]int, error) {
	switch opts.Mode {
	case SplitIntervals:
		n, err := strconv.Atoi(strings.TrimSpace(opts.Span))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%w: the span '%s' is not a page count of 1 or more", ErrPageSelection, opts.Span)
		}
		if parts := (count + n - 1) / n; parts > opts.MaxParts {
			return nil, fmt.Errorf("%w: %d pages in parts of %d are %d PDFs, more than %d", ErrTooManyParts, count, n, parts, opts.MaxParts)
		}
		var parts [][]int
		for from := 1; from <= count; from += n {
			parts = append(parts, pageRange(from, min(from+n-1, count)))
		}
		return parts, nil
	case SplitPages:
		pages, err := SelectPages(count, opts.Span)
		if err != nil {
			return nil, err
		}
		if opts.Unify {
			return [][]int{pages}, nil
		}
		if len(pages) > opts.MaxParts {
			return nil, fmt.Errorf("%w: the selection is %d pages, each a PDF, more than %d", ErrTooManyParts, len(pages), opts.MaxParts)
		}
		parts := make([][]int, len(pages))
		for i, p := range pages {
			parts[i] = []int{p}
		}
		return parts, nil
	}
	return nil, fmt.Errorf("the split mode '%s' is neither '%s' nor '%s'", opts.Mode, SplitIntervals, SplitPages)
}

// SelectPages are the pages of a document of count pages that sel
// selects (SplitOptions.Span's syntax), ascending; a selection that
// selects none is an error.
func SelectPages(count int, sel string) ([]int, error) {
	parsed, err := parseSelection(sel)
	if err != nil {
		return nil, err
	}
	set, err := api.PagesForPageSelection(count, parsed, false, false)
	if err != nil {
		return nil, fmt.Errorf("%w: '%s': %v", ErrPageSelection, sel, err)
	}
	var pages []int
	for p, on := range set {
		if on && p >= 1 && p <= count {
			pages = append(pages, p)
		}
	}
	if len(pages) == 0 {
		return nil, fmt.Errorf("%w: '%s' selects none of the %d pages", ErrPageSelection, sel, count)
	}
	slices.Sort(pages)
	return pages, nil
}

// CheckPageSelection reports whether sel is a page selection (the syntax
// of SplitOptions.Span) without a document to select from.
func CheckPageSelection(sel string) error {
	_, err := parseSelection(sel)
	return err
}

// parseSelection is a page selection in pdfcpu's terms.
func parseSelection(sel string) ([]string, error) {
	tokens := strings.Split(strings.Join(strings.Fields(sel), ""), ",")
	if len(tokens) > maxSelectionTokens {
		return nil, fmt.Errorf("%w: more than %d ranges", ErrPageSelection, maxSelectionTokens)
	}
	for i, t := range tokens {
		// qpdf's and pdftk's word for the last page, as pdfcpu spells it.
		bounds := strings.Split(t, "-")
		for j, b := range bounds {
			if b == "z" || b == "end" {
				bounds[j] = "l"
			}
		}
		tokens[i] = strings.Join(bounds, "-")
	}
	parsed, err := api.ParsePageSelection(strings.Join(tokens, ","))
	if err != nil || len(parsed) == 0 {
		return nil, fmt.Errorf("%w: '%s'", ErrPageSelection, sel)
	}
	return parsed, nil
}

// maxSelectionTokens bounds the ranges of a page selection: each is a
// pass over the document's pages.
const maxSelectionTokens = 1000

func pageRange(from, thru int) []int {
	out := make([]int, 0, thru-from+1)
	for p := from; p <= thru; p++ {
		out = append(out, p)
	}
	return out
}

// readPDF reads and validates pdf, relaxed, with pdfcpu's own
// optimisation (shared resources deduplicated) as its commands do.
func readPDF(pdf []byte) (*model.Context, error) {
	return api.ReadValidateAndOptimize(bytes.NewReader(pdf), Conf())
}

// extractPages writes the pages of src as a PDF of their own.
func extractPages(src *model.Context, pages []int) ([]byte, error) {
	dst, err := pdfcpu.ExtractPages(src, pages, false)
	if err != nil {
		return nil, err
	}
	return writePDF(dst)
}

// writePDF serialises a document.
func writePDF(ctx *model.Context) ([]byte, error) {
	var buf bytes.Buffer
	if err := api.Write(ctx, &buf, Conf()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
