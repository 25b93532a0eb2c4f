package gotenberg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime/multipart"
	"net/http"
	"slices"

	"github.com/pdfexport/pdfexport/internal/assemble/engine"
)

// embedsField is the form field of the files to attach: they are neither
// the documents nor assets.
const embedsField = "embeds"

// readEmbed keeps a file of the embeds field.
func (f *form) readEmbed(p *multipart.Part, name string, lim limits) error {
	for _, e := range f.embeds {
		if e.name == name {
			return badRequest("Invalid form data: the file '%s' is sent twice in form field '%s'", name, embedsField)
		}
	}
	if len(f.embeds) >= engine.MaxEmbeds {
		return &httpError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("Invalid form data: more than %d files in form field '%s'", engine.MaxEmbeds, embedsField)}
	}
	data, err := io.ReadAll(p)
	if err != nil {
		return formReadErr(err, lim)
	}
	f.embeds = append(f.embeds, upload{name: name, data: data})
	return nil
}

// readEmbeds reads the embeds files and embedsMetadata (a JSON object of
// mimeType and relationship by file name); ok is false when there is
// nothing to attach or a field is invalid (in f's errors).
func readEmbeds(f *form) (opts engine.EmbedOptions, ok bool) {
	f.mark(embedsField)
	for _, e := range f.embeds {
		opts.Files = append(opts.Files, engine.File{Name: e.name, Data: e.data})
	}
	if v := f.value("embedsMetadata"); v != "" {
		var raw map[string]map[string]string
		if err := json.Unmarshal([]byte(v), &raw); err != nil {
			// Gotenberg's words for this field.
			f.errs = append(f.errs, fmt.Sprintf("form field 'embedsMetadata' is invalid: %v", err))
			return opts, false
		}
		opts.Meta = map[string]engine.EmbedMeta{}
		for _, name := range slices.Sorted(maps.Keys(raw)) {
			m := engine.EmbedMeta{MimeType: raw[name]["mimeType"], Relationship: raw[name]["relationship"]}
			for k := range raw[name] {
				if k != "mimeType" && k != "relationship" {
					f.errs = append(f.errs, unsupported("embedsMetadata", fmt.Sprintf("the key '%s' of '%s'; pdfexport sets mimeType and relationship", printable(k), printable(name))).Error())
				}
			}
			opts.Meta[name] = m
		}
	}
	if len(opts.Files) == 0 && len(opts.Meta) == 0 {
		return opts, false
	}
	if err := engine.CheckEmbeds(opts); err != nil {
		field := "embedsMetadata"
		if errors.Is(err, engine.ErrArchiveBomb) {
			field = embedsField
		}
		f.errs = append(f.errs, fmt.Sprintf("form field '%s' is invalid (%s)", field, reason(err)))
		return opts, false
	}
	return opts, true
}

// embedStep attaches the embeds files to every PDF.
func embedStep(f *form) (postStep, bool) {
	opts, ok := readEmbeds(f)
	if !ok {
		return postStep{}, false
	}
	return postStep{order: stepEmbed, run: embedRun(opts)}, true
}

func embedRun(opts engine.EmbedOptions) func(ctx context.Context, files []upload) ([]upload, error) {
	return func(ctx context.Context, files []upload) ([]upload, error) {
		return perFile(ctx, files, func(ctx context.Context, data []byte) ([]byte, error) { return engine.Embed(ctx, data, opts) })
	}
}

// embedRoute is POST /forms/pdfengines/embed; without embeds the PDFs
// come back as they are, as in Gotenberg.
func embedRoute(f *form) engineJob {
	opts, ok := readEmbeds(f)
	return func(ctx context.Context, _ *form, pdfs []upload) ([]upload, error) {
		if !ok {
			return pdfs, nil
		}
		return embedRun(opts)(ctx, pdfs)
	}
}
