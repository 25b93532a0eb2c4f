package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// WriteMetadata writes the metadata into pdf: the information
// dictionary's entries (Title, Author, Subject, Keywords, Creator,
// Producer, CreationDate, ModDate, Trapped and any custom key) and an XMP
// packet beside them (with Copyright and Marked, which only XMP holds).
// Keys not given keep their values; Keywords given replace the old ones.
func WriteMetadata(ctx context.Context, pdf []byte, opts MetadataOptions) ([]byte, error) {
	plan, err := planMetadata(opts.Values)
	if err != nil {
		return nil, err
	}
	conf := Conf()
	// Classic cross-reference tables, so that the information dictionary
	// can be rewritten by an update appended to the file (below).
	conf.WriteObjectStream, conf.WriteXRefStream = false, false
	pc, err := api.ReadValidateAndOptimize(bytes.NewReader(pdf), conf)
	if err != nil {
		return nil, &InputError{Err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	info, err := infoDict(pc)
	if err != nil {
		return nil, &InputError{Err: err}
	}
	kept := info.Clone().(types.Dict)
	for k, v := range plan.info {
		o, err := v.object()
		if err != nil {
			return nil, &InputError{Err: &MetadataError{Keys: []KeyError{{Key: k, Why: err.Error()}}}}
		}
		info[k], kept[k] = o, o
	}
	return writeAgreeing(pc, kept, plan)
}

// writeAgreeing writes pc with an XMP packet of info and plan, and info
// as the information dictionary, which PDF/A asks the packet to agree
// with: pdfcpu stamps Producer, CreationDate and ModDate with its own on
// every write, so the dictionary written last has the document's.
func writeAgreeing(pc *model.Context, info types.Dict, plan metaPlan) ([]byte, error) {
	if err := writeXMP(pc, info, plan); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := api.WriteContext(pc, &out); err != nil {
		return nil, fmt.Errorf("writing the PDF: %w", err)
	}
	return appendInfo(out.Bytes(), int(pc.Info.ObjectNumber), info)
}

// infoDict is the document's information dictionary, made when it has none.
func infoDict(pc *model.Context) (types.Dict, error) {
	if pc.Info == nil {
		ir, err := pc.IndRefForNewObject(types.NewDict())
		if err != nil {
			return nil, err
		}
		pc.Info = ir
	}
	d, err := pc.DereferenceDict(*pc.Info)
	if err != nil || d == nil {
		return nil, errors.Join(errors.New("the information dictionary is not readable"), err)
	}
	return d, nil
}

// object is v as a PDF object.
func (v infoValue) object() (types.Object, error) {
	switch {
	case v.date != nil:
		return types.StringLiteral(pdfDate(*v.date)), nil
	case v.name != "":
		return types.Name(v.name), nil
	}
	s, err := types.EscapedUTF16String(v.text)
	if err != nil {
		return nil, err
	}
	return types.StringLiteral(*s), nil
}

var (
	lastStartXRef = regexp.MustCompile(`startxref\s+(\d+)\s+%%EOF\s*$`)
	lastTrailer   = regexp.MustCompile(`(?s)trailer\s*(<<.*>>)\s*startxref\s+\d+\s+%%EOF\s*$`)
)

// appendInfo appends to pdf (written with a classic cross-reference
// table) an update that replaces object objNr with the dictionary d.
func appendInfo(pdf []byte, objNr int, d types.Dict) ([]byte, error) {
	sx := lastStartXRef.FindSubmatch(pdf)
	tr := lastTrailer.FindSubmatch(pdf)
	if sx == nil || tr == nil {
		return nil, errors.New("the written PDF has no classic trailer")
	}
	prev, _ := strconv.Atoi(string(sx[1]))
	trailer := tr[1]
	out := bytes.NewBuffer(append([]byte(nil), pdf...))
	if !bytes.HasSuffix(pdf, []byte("\n")) {
		out.WriteByte('\n')
	}
	off := out.Len()
	fmt.Fprintf(out, "%d 0 obj\n%s\nendobj\n", objNr, d.PDFString())
	xref := out.Len()
	fmt.Fprintf(out, "xref\n0 1\n0000000000 65535 f\r\n%d 1\n%010d 00000 n\r\n", objNr, off)
	fmt.Fprintf(out, "trailer\n%s/Prev %d>>\nstartxref\n%d\n%%%%EOF\n", trailer[:len(trailer)-2], prev, xref)
	return out.Bytes(), nil
}
