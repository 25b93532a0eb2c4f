// Package assemble builds one manual from the PDFs of its chapters, file
// to file: the chapters' pages in order, an outline with one entry per
// chapter and the chapter's own headings beneath it, and links between
// chapters turned into links inside the document.
//
// It reads what Chromium prints (see pdf.go) and writes a new file object
// by object, copying content streams, fonts and images from the chapter
// files without decoding them. What it holds in memory is per page and per
// link target (numbers, not content), so a 1,400-page manual costs about
// what a 20-page one does.
//
// Link targets: Chromium writes a named destination only for elements a
// link of the same page points at, so the renderer marks every element
// that has an id with an empty 1×1 link to AnchorURL(id) (render.Source's
// MarkAnchors). Its annotation says on which page and where the element
// was printed; Assemble reads those positions, removes the marks, and
// points every link to chapter j (its URL, with or without a fragment) at
// the page and place of that element, or at j's first page.
package assemble
