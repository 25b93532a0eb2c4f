package engine

import (
	"bytes"
	"context"
	"strconv"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// ReadMetadata is pdf's metadata under ExifTool's tag names, as
// Gotenberg's metadata/read answers them: PDFVersion, PageCount, the
// information dictionary's entries (CreationDate as CreateDate, ModDate
// as both ModifyDate and ModDate, the names WriteMetadata takes; Keywords
// as a list when there are several) and the XMP packet's Copyright,
// Marked and Trapped.
func ReadMetadata(ctx context.Context, pdf []byte) (map[string]any, error) {
	pc, err := api.ReadContext(bytes.NewReader(pdf), Conf())
	if err != nil {
		return nil, &InputError{Err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := map[string]any{}
	if v, err := strconv.ParseFloat(pc.VersionString(), 64); err == nil {
		out["PDFVersion"] = v
	}
	if pc.EnsurePageCount() == nil {
		out["PageCount"] = pc.PageCount
	}
	if pc.Info != nil {
		if d, err := pc.DereferenceDict(*pc.Info); err == nil && d != nil {
			readInfo(pc.XRefTable.DereferenceText, d, out)
		}
	}
	if root, err := pc.Catalog(); err == nil {
		x := readXMP(pc, root)
		if x.rights != nil {
			out["Copyright"] = *x.rights
		}
		if x.marked != nil {
			out["Marked"] = *x.marked
		}
		if _, ok := out["Trapped"]; !ok && x.trapped != "" {
			out["Trapped"] = x.trapped
		}
	}
	return out, nil
}

// readInfo copies the information dictionary's entries into out.
func readInfo(text func(types.Object) (string, error), d types.Dict, out map[string]any) {
	for k, o := range d {
		var s string
		if n, ok := o.(types.Name); ok {
			s = string(n)
		} else if t, err := text(o); err == nil {
			s = t
		} else {
			continue
		}
		switch k {
		case "CreationDate":
			if e, ok := exifDate(s); ok {
				out["CreateDate"] = e
			}
		case "ModDate":
			if e, ok := exifDate(s); ok {
				out["ModifyDate"], out["ModDate"] = e, e
			}
		case "Keywords":
			switch kw := splitKeywords(s); len(kw) {
			case 0:
			case 1:
				out[k] = kw[0]
			default:
				out[k] = kw
			}
		default:
			out[k] = s
		}
	}
}
