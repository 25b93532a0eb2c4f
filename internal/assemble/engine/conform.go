package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/pdfexport/pdfexport/internal/assemble/pdfclaim"
)

// ConformOptions is what Conform makes the PDF claim.
type ConformOptions = pdfclaim.Claim

// ErrUntagged is Conform's refusal of a PDF/UA claim for a PDF with no
// structure tree: tagging is the content's, not something to add after.
var ErrUntagged = errors.New("the PDF has no structure tree (it is not tagged), which PDF/UA needs")

// Conform makes pdf claim opts as the manual assembler's files do: an XMP
// packet with the identification that agrees with the information
// dictionary, an sRGB output intent for PDF/A, no encryption, and for
// PDF/UA the catalog's MarkInfo and DisplayDocTitle over the structure
// tree the PDF must already have. Classic cross-reference tables and no
// object streams keep the file inside PDF/A-1's PDF 1.4.
func Conform(ctx context.Context, pdf []byte, opts ConformOptions) ([]byte, error) {
	if !opts.Valid() {
		return nil, &InputError{Err: fmt.Errorf("PDF/A level %q is not one of %v", opts.PDFA, pdfclaim.Levels)}
	}
	conf := Conf()
	conf.WriteObjectStream, conf.WriteXRefStream = false, false
	pc, err := api.ReadValidateAndOptimize(bytes.NewReader(pdf), conf)
	if err != nil {
		return nil, &InputError{Err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	root, err := pc.Catalog()
	if err != nil {
		return nil, &InputError{Err: err}
	}
	if opts.UA {
		if _, ok := root.Find("StructTreeRoot"); !ok {
			return nil, &InputError{Err: ErrUntagged}
		}
		root["MarkInfo"] = types.Dict{"Marked": types.Boolean(true)}
		prefs, _ := pc.DereferenceDict(root["ViewerPreferences"])
		if prefs == nil {
			prefs = types.NewDict()
		}
		prefs["DisplayDocTitle"] = types.Boolean(true)
		root["ViewerPreferences"] = prefs
	}
	if opts.PDFA != "" {
		intent, err := outputIntent(pc)
		if err != nil {
			return nil, err
		}
		root["OutputIntents"] = types.Array{intent}
	}
	pc.Encrypt, pc.E = nil, nil // PDF/A forbids encryption; a read file is decrypted
	info, err := infoDict(pc)
	if err != nil {
		return nil, &InputError{Err: err}
	}
	return writeAgreeing(pc, info.Clone().(types.Dict), metaPlan{claim: &opts})
}

// outputIntent is a new PDF/A output intent with the sRGB profile.
func outputIntent(pc *model.Context) (types.Object, error) {
	sd, err := pc.NewStreamDictForBuf(pdfclaim.SRGBProfile())
	if err != nil {
		return nil, err
	}
	sd.InsertInt("N", 3)
	if err := sd.Encode(); err != nil {
		return nil, err
	}
	profile, err := pc.IndRefForNewObject(*sd)
	if err != nil {
		return nil, err
	}
	d := types.NewDict()
	d.InsertName("Type", "OutputIntent")
	d.InsertName("S", pdfclaim.IntentSubtype)
	d.InsertString("OutputConditionIdentifier", pdfclaim.SRGBName)
	d.InsertString("Info", pdfclaim.SRGBName)
	d.InsertString("RegistryName", pdfclaim.ICCRegistry)
	d["DestOutputProfile"] = *profile
	return d, nil
}
