package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// imagePDF is a page drawing an RGB photo with a soft mask, a gray
// photo, a small image and an indexed one; it returns the PDF and the
// images' object numbers by name.
func imagePDF() ([]byte, map[string]int) {
	var b pdfBuilder
	mask := b.Stream("/Type /XObject /Subtype /Image /Width 400 /Height 300 /ColorSpace /DeviceGray /BitsPerComponent 8", photo(400, 300, 1), true)
	imgs := map[string]int{
		"rgb":     b.Stream(fmt.Sprintf("/Type /XObject /Subtype /Image /Width 400 /Height 300 /ColorSpace /DeviceRGB /BitsPerComponent 8 /SMask %d 0 R", mask), photo(400, 300, 3), true),
		"gray":    b.Stream("/Type /XObject /Subtype /Image /Width 300 /Height 300 /ColorSpace /DeviceGray /BitsPerComponent 8", photo(300, 300, 1), true),
		"small":   b.Stream("/Type /XObject /Subtype /Image /Width 40 /Height 40 /ColorSpace /DeviceRGB /BitsPerComponent 8", photo(40, 40, 3), true),
		"indexed": b.Stream("/Type /XObject /Subtype /Image /Width 300 /Height 300 /ColorSpace [/Indexed /DeviceRGB 255 <"+string(bytes.Repeat([]byte("00"), 768))+">] /BitsPerComponent 8", photo(300, 300, 1), true),
	}
	imgs["mask"] = mask
	xo := fmt.Sprintf("/Resources << /XObject << /A %d 0 R /B %d 0 R /C %d 0 R /D %d 0 R >> >>", imgs["rgb"], imgs["gray"], imgs["small"], imgs["indexed"])
	pages := b.Reserve()
	content := b.Stream("", []byte("q 400 0 0 300 0 0 cm /A Do Q q 300 0 0 300 0 400 cm /B Do Q q 40 0 0 40 500 500 cm /C Do Q q 100 0 0 100 300 0 cm /D Do Q"), false)
	page := b.Add("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] %s /Contents %d 0 R >>", pages, xo, content)
	b.Set(pages, "<< /Type /Pages /Kids [%d 0 R] /Count 1 >>", page)
	return b.Bytes(b.Add("<< /Type /Catalog /Pages %d 0 R >>", pages)), imgs
}

// TestOptimizeImages: the large gray and RGB images become JPEG of the
// same size (the soft mask kept), the PDF shrinks, a lower quality
// shrinks it more; small and indexed images stay as they were.
func TestOptimizeImages(t *testing.T) {
	doc, imgs := imagePDF()
	src := readBack(t, doc)
	sizes := map[int]int{}
	for q, opts := range map[int]OptimizeOptions{80: {}, 30: {Quality: 30}} {
		out, err := OptimizeImages(context.Background(), doc, opts)
		if err != nil {
			t.Fatal(err)
		}
		sizes[q] = len(out)
		ctx := readBack(t, out)
		for name, nr := range imgs {
			sd, _, err := ctx.DereferenceStreamDict(*types.NewIndirectRef(nr, 0))
			if err != nil || sd == nil {
				t.Fatalf("%s: %v", name, err)
			}
			orig, _, _ := src.DereferenceStreamDict(*types.NewIndirectRef(nr, 0))
			jpeg := sd.FilterPipeline[0].Name == "DCTDecode"
			if want := name == "rgb" || name == "gray"; jpeg != want {
				t.Errorf("q%d %s: JPEG %v, want %v", q, name, jpeg, want)
			}
			if *sd.IntEntry("Width") != *orig.IntEntry("Width") || *sd.IntEntry("Height") != *orig.IntEntry("Height") {
				t.Errorf("q%d %s: resized", q, name)
			}
			if name == "rgb" && sd.Dict["SMask"] == nil {
				t.Errorf("q%d: the soft mask is gone", q)
			}
		}
	}
	if !(sizes[30] < sizes[80] && sizes[80] < len(doc)/2) {
		t.Errorf("sizes %v from %d: want q30 < q80 < half", sizes, len(doc))
	}
}

// TestOptimizeImagesNothingToGain: a PDF without images comes back as it
// came; a quality out of range is refused.
func TestOptimizeImagesNothingToGain(t *testing.T) {
	doc := numberedPDF(1)
	out, err := OptimizeImages(context.Background(), doc, OptimizeOptions{})
	if err != nil || !bytes.Equal(out, doc) {
		t.Errorf("%v, want the PDF unchanged", err)
	}
	if _, err := OptimizeImages(context.Background(), doc, OptimizeOptions{Quality: 101}); !errors.As(err, new(*InputError)) {
		t.Errorf("quality 101: %v, want an InputError", err)
	}
}
