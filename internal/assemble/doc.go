// Package assemble builds one manual from the PDFs of its chapters, file
// to file: the chapters' pages in order, an outline with one entry per
// chapter and the chapter's own headings beneath it, and links between
// chapters turned into links inside the document.
//
// Assemble works in four stages, in this order:
//
//  1. Read (read.go, marks.go, outline.go): each part is analyzed,
//     several at once: its pages, where its anchor and heading marks
//     were printed, its named destinations and its outline.
//  2. Number (assemble.go): every page of the manual takes its object
//     number before any is written, so that a link or an outline entry
//     can point at a page of a part not yet copied.
//  3. Copy (copy.go, links.go, overlay.go, structure.go): part by part,
//     each page and the objects it uses, its annotations (marks
//     dropped, links to other parts made internal), the overlay's page
//     drawn over it, and in a tagged manual the part's structure tree.
//  4. Finish (catalog.go, outline.go, write.go): the structure tree's
//     root, the page tree, the outline, the catalog with its metadata,
//     the Info dictionary and the cross-reference table.
//
// It reads what Chromium prints (see pdf.go) and writes a new file object
// by object, copying content streams, fonts and images from the chapter
// files without decoding them. What it holds in memory is per page and per
// link target (numbers, not content), so a long manual costs little more
// than a short one.
//
// Link targets: Chromium writes a named destination only for elements a
// link of the same page points at, so the renderer marks every element
// that has an id with an empty 1×1 link to AnchorPrefix plus the escaped
// id (render.Source's MarkAnchors). Its annotation says on which page
// and where the element was printed; Assemble reads those positions,
// removes the marks, and points every link to chapter j (its URL, with
// or without a fragment) at the page and place of that element, or at j's
// first page.
package assemble
