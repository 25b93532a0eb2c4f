package engine

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"maps"
	"slices"

	"github.com/pdfcpu/pdfcpu/pkg/filter"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// DefaultImageQuality is the JPEG quality of OptimizeImages when its
// options name none (Gotenberg's default).
const DefaultImageQuality = 80

// Which images OptimizeImages re-encodes: smaller ones (icons, line art
// Flate already keeps small) would gain little and blur; larger ones
// would take more memory to decode than a job may hold.
const (
	MinOptimizeImageBytes = 30 << 10
	MaxOptimizePixels     = 16 << 20
)

// OptimizeOptions configure OptimizeImages.
type OptimizeOptions struct {
	Quality int // JPEG quality, 1 to 100; 0 is DefaultImageQuality
}

// OptimizeImages re-encodes the losslessly compressed photos of pdf as
// JPEG, which is what makes a PDF Chromium printed from a page with large
// PNGs small: Chromium embeds them Flate-compressed. Only 8-bit gray or
// RGB images (device, calibrated or ICC-based colour) without a colour-key
// mask or a Decode array are candidates; a soft mask (transparency) is
// kept as it is, losslessly. An image whose JPEG would not be smaller stays, and a PDF
// with nothing to gain is returned as it came.
func OptimizeImages(ctx context.Context, pdf []byte, opts OptimizeOptions) ([]byte, error) {
	q := opts.Quality
	if q == 0 {
		q = DefaultImageQuality
	}
	if q < 1 || q > 100 {
		return nil, &InputError{Err: fmt.Errorf("the image quality %d is not from 1 to 100", q)}
	}
	src, err := readPDF(pdf)
	if err != nil {
		return nil, &InputError{Err: err}
	}
	xt := src.XRefTable
	masks := softMasks(xt)
	changed := 0
	for _, nr := range slices.Sorted(maps.Keys(xt.Table)) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e := xt.Table[nr]
		if e == nil || e.Free || masks[nr] {
			continue
		}
		sd, ok := e.Object.(types.StreamDict)
		if !ok {
			continue
		}
		if out, ok := recompressImage(xt, sd, q); ok {
			e.Object = *out
			changed++
		}
	}
	if changed == 0 {
		return pdf, nil
	}
	return writePDF(src)
}

// softMasks are the images that are another's transparency: JPEG's
// artefacts would fringe every edge they cut.
func softMasks(xt *model.XRefTable) map[int]bool {
	out := map[int]bool{}
	for _, e := range xt.Table {
		if e == nil || e.Free {
			continue
		}
		if sd, ok := e.Object.(types.StreamDict); ok {
			if ref, ok := sd.Dict["SMask"].(types.IndirectRef); ok {
				out[ref.ObjectNumber.Value()] = true
			}
		}
	}
	return out
}

// recompressImage is sd as a JPEG image, when it is a candidate and the
// JPEG is smaller.
func recompressImage(xt *model.XRefTable, sd types.StreamDict, quality int) (*types.StreamDict, bool) {
	w, h, comp, ok := candidateImage(xt, sd)
	if !ok {
		return nil, false
	}
	raw := sd
	raw.Content = nil
	if err := raw.DecodeWithLimit(int64(w*h*comp) + 4096); err != nil || len(raw.Content) < w*h*comp {
		return nil, false
	}
	img := samplesImage(raw.Content, w, h, comp)
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: quality}); err != nil || buf.Len() >= len(sd.Raw) {
		return nil, false
	}
	cs := model.DeviceRGBCS
	if comp == 1 {
		cs = model.DeviceGrayCS
	}
	out, err := model.CreateDCTImageStreamDict(xt, buf.Bytes(), w, h, 8, cs)
	if err != nil {
		return nil, false
	}
	// The colour space (an ICC profile), the transparency and the
	// rendering hints are the image's own.
	out.Delete("Interpolate")
	for _, k := range []string{"ColorSpace", "SMask", "Intent", "Interpolate", "Alternates", "OC", "Metadata", "StructParent"} {
		if v, ok := sd.Find(k); ok {
			out.Dict[k] = v
		}
	}
	return out, true
}

// candidateImage reports whether sd is an image OptimizeImages may
// re-encode, with its width, height and colour components.
func candidateImage(xt *model.XRefTable, sd types.StreamDict) (w, h, comp int, ok bool) {
	if n := sd.NameEntry("Subtype"); n == nil || *n != "Image" {
		return 0, 0, 0, false
	}
	if len(sd.FilterPipeline) != 1 || sd.FilterPipeline[0].Name != filter.Flate || len(sd.Raw) < MinOptimizeImageBytes {
		return 0, 0, 0, false
	}
	for _, k := range []string{"ImageMask", "Mask", "Decode", "SMaskInData"} {
		if v, found := sd.Find(k); found && v != nil {
			if b, isBool := v.(types.Boolean); !isBool || bool(b) {
				return 0, 0, 0, false
			}
		}
	}
	if bpc := sd.IntEntry("BitsPerComponent"); bpc == nil || *bpc != 8 {
		return 0, 0, 0, false
	}
	w, okW := intEntry(xt, sd.Dict, "Width")
	h, okH := intEntry(xt, sd.Dict, "Height")
	if !okW || !okH || w < 1 || h < 1 || int64(w)*int64(h) > MaxOptimizePixels {
		return 0, 0, 0, false
	}
	comp = colorComponents(xt, sd.Dict)
	return w, h, comp, comp == 1 || comp == 3
}

func intEntry(xt *model.XRefTable, d types.Dict, key string) (int, bool) {
	o, found := d.Find(key)
	if !found {
		return 0, false
	}
	i, err := xt.DereferenceInteger(o)
	if err != nil || i == nil {
		return 0, false
	}
	return i.Value(), true
}

// colorComponents are the components of an image's colour space when it
// is gray or RGB, device, calibrated or ICC-based; 0 for any other.
func colorComponents(xt *model.XRefTable, d types.Dict) int {
	o, err := xt.Dereference(d["ColorSpace"])
	if err != nil {
		return 0
	}
	switch cs := o.(type) {
	case types.Name:
		switch cs {
		case model.DeviceGrayCS:
			return 1
		case model.DeviceRGBCS:
			return 3
		}
	case types.Array:
		if len(cs) != 2 {
			return 0
		}
		name, _ := cs[0].(types.Name)
		switch name {
		case model.CalGrayCS:
			return 1
		case model.CalRGBCS:
			return 3
		case model.ICCBasedCS:
			profile, _, err := xt.DereferenceStreamDict(cs[1])
			if err != nil || profile == nil {
				return 0
			}
			if n, ok := intEntry(xt, profile.Dict, "N"); ok && (n == 1 || n == 3) {
				return n
			}
		}
	}
	return 0
}

// samplesImage wraps 8-bit samples as an image the JPEG encoder takes.
func samplesImage(samples []byte, w, h, comp int) image.Image {
	if comp == 1 {
		return &image.Gray{Pix: samples[:w*h], Stride: w, Rect: image.Rect(0, 0, w, h)}
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i, j := 0, 0; i < w*h*3; i, j = i+3, j+4 {
		img.Pix[j], img.Pix[j+1], img.Pix[j+2], img.Pix[j+3] = samples[i], samples[i+1], samples[i+2], 0xff
	}
	return img
}
