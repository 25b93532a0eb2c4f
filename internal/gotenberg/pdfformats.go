package gotenberg

import (
	"context"
	"errors"
	"fmt"

	"github.com/pdfexport/pdfexport/internal/assemble/engine"
	"github.com/pdfexport/pdfexport/internal/assemble/pdfclaim"
)

// formatNotSupported is Gotenberg's answer to a pdfa value no engine
// applies.
const formatNotSupported = "The requested PDF format is not supported, or no PDF engine could apply it. Valid formats include PDF/A-1b, PDF/A-2b, PDF/A-3b, and PDF/UA."

// pdfaLevels are Gotenberg's pdfa values its engine applies, as claims.
var pdfaLevels = map[string]string{"PDF/A-1b": "1b", "PDF/A-2b": "2b", "PDF/A-3b": "3b"}

// readPDFFormats reads pdfa and pdfua; ok: one asks for a claim.
func readPDFFormats(f *form) (pdfa string, ua, ok bool) {
	pdfa, ua = f.value("pdfa"), f.bool("pdfua", false)
	return pdfa, ua, pdfa != "" || ua
}

// convertStep makes every PDF claim pdfa and pdfua (engine.Conform), in
// Gotenberg's place: after the marks, rotation and optimisation, before
// the metadata, embeds and encryption. Gotenberg checks the value and its
// clashes with encryption and embeds once the PDF is made, so this does.
func convertStep(f *form) (postStep, bool) {
	pdfa, ua, ok := readPDFFormats(f)
	if !ok {
		return postStep{}, false
	}
	return postStep{order: stepConvert, run: func(ctx context.Context, files []upload) ([]upload, error) {
		claim, err := pdfClaim(f, pdfa, ua)
		if err != nil {
			return nil, err
		}
		return eachPDF(files, func(data []byte) ([]byte, error) {
			out, err := engine.Conform(ctx, data, claim)
			if errors.Is(err, engine.ErrUntagged) {
				return nil, badRequest("Invalid form data: form field 'pdfua' cannot be honoured: %v; convert it with generateTaggedPdf", err)
			}
			return out, err
		})
	}}, true
}

// pdfClaim is the claim of pdfa and pdfua, or Gotenberg's 400 for a value
// or a combination it refuses (PDF/A forbids encryption; only PDF/A-3
// admits attachments).
func pdfClaim(f *form, pdfa string, ua bool) (pdfclaim.Claim, error) {
	c := pdfclaim.Claim{UA: ua}
	if pdfa == "" {
		return c, nil
	}
	level, ok := pdfaLevels[pdfa]
	if !ok {
		return c, badRequest("%s", formatNotSupported)
	}
	if f.text("userPassword") != "" {
		return c, badRequest("Invalid form data: PDF/A format is incompatible with encryption")
	}
	if len(f.embeds) > 0 && level[0] != '3' {
		return c, badRequest("%s", fmt.Sprintf("Invalid form data: PDF format '%s' does not support embedded files; only PDF/A-3 variants allow attachments", printable(pdfa)))
	}
	c.PDFA = level
	return c, nil
}

// convertRoute is POST /forms/pdfengines/convert: every PDF made to claim
// pdfa and pdfua.
func convertRoute(f *form) engineJob {
	step, ok := convertStep(f)
	return func(ctx context.Context, _ *form, pdfs []upload) ([]upload, error) {
		if !ok {
			return nil, badRequest("Invalid form data: either 'pdfa' or 'pdfua' form fields must be provided")
		}
		return step.run(ctx, pdfs)
	}
}
