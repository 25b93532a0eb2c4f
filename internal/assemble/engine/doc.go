// Package engine is every operation on a finished PDF: merge, split,
// rotate, stamp, watermark, flatten, embed, bookmarks, metadata,
// encryption, image optimisation. It works on pdfcpu, in memory, on
// documents its caller has already bounded in size, and is shared by the
// Gotenberg PDF-engine routes, the steps after a Gotenberg conversion and
// the assembly of manuals. An operation takes a context first, the PDF
// as bytes and its own options struct, and returns the new bytes; a PDF
// the caller sent that pdfcpu cannot read is an *InputError, so a caller
// answers it as the caller's fault (errors.As), never as the server's.
package engine
