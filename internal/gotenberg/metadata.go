package gotenberg

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/pdfexport/pdfexport/internal/assemble/engine"
)

// readMetadataField reads the metadata field (a JSON object of ExifTool
// tag names) and checks every key, as Gotenberg's ExifTool would write
// it; a refused key is in f's errors, Gotenberg's text naming them all.
func readMetadataField(f *form, required bool) (map[string]any, bool) {
	if !f.has("metadata") {
		if required {
			f.errs = append(f.errs, "form field 'metadata' is required")
		}
		return nil, false
	}
	var values map[string]any
	if !f.json("metadata", &values) {
		return nil, false
	}
	var me *engine.MetadataError
	if err := engine.CheckMetadata(values); errors.As(err, &me) {
		f.fault = badRequest("%s", metadataMessage(me))
		return nil, false
	} else if err != nil {
		f.invalid("metadata", f.value("metadata"), err)
		return nil, false
	}
	return values, len(values) > 0
}

// metadataStep is the metadata step of a conversion or a merge.
func metadataStep(f *form) (postStep, bool) {
	values, ok := readMetadataField(f, false)
	if !ok {
		return postStep{}, false
	}
	return postStep{order: stepMetadata, run: func(ctx context.Context, files []upload) ([]upload, error) {
		return eachPDF(files, func(data []byte) ([]byte, error) {
			return engine.WriteMetadata(ctx, data, engine.MetadataOptions{Values: values})
		})
	}}, true
}

// writeMetadataRoute is POST /forms/pdfengines/metadata/write.
func writeMetadataRoute(f *form) engineJob {
	values, _ := readMetadataField(f, true)
	return func(ctx context.Context, _ *form, pdfs []upload) ([]upload, error) {
		return eachPDF(pdfs, func(data []byte) ([]byte, error) {
			return engine.WriteMetadata(ctx, data, engine.MetadataOptions{Values: values})
		})
	}
}

// readMetadata is POST /forms/pdfengines/metadata/read: each PDF's
// metadata under ExifTool's tag names, by file name.
func readMetadata(ctx context.Context, _ *form, pdfs []upload) ([]upload, error) {
	all := make(map[string]map[string]any, len(pdfs))
	for _, p := range pdfs {
		m, err := engine.ReadMetadata(ctx, p.data)
		if err != nil {
			return nil, engineErr(p.name, err)
		}
		all[p.name] = m
	}
	b, err := json.Marshal(all)
	if err != nil {
		return nil, err
	}
	return nil, &jsonAnswer{body: b}
}
