package gotenberg

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"

	"github.com/pdfexport/pdfexport/internal/assemble/engine"
	"github.com/pdfexport/pdfexport/internal/assemble/pdfperm"
)

// The PDF-engine routes work on PDFs the caller uploads: nothing is
// rendered, so they run here in bin/api with pdfcpu (pure Go, in memory),
// bounded: MaxEngineBytes per request and Config.EngineJobs at once. Their
// output is not stored; it is the answer.

// MaxEngineBytes bounds a PDF-engine request: the most the worker's
// post-processing takes too (internal/tasks/export.MaxPostProcessBytes).
const MaxEngineBytes = 32 << 20

// maxEngineFiles bounds the PDFs of one request.
const maxEngineFiles = 64

// DefaultEngineJobs is Config.EngineJobs' default: pdfcpu holds a whole
// document, several times its size, so a few jobs at once bound the
// memory of bin/api.
const DefaultEngineJobs = 2

// refusedRoutes are Gotenberg's routes pdfexport answers 501, and why.
var refusedRoutes = map[string]string{
	"/forms/pdfengines/split":             "split the PDF with a PDF tool of your own, or convert with nativePageRanges",
	"/forms/pdfengines/flatten":           "Chromium prints no form fields to flatten",
	"/forms/pdfengines/convert":           "PDF/A and PDF/UA conversion needs LibreOffice, which pdfexport does not run",
	"/forms/pdfengines/optimize":          "image recompression is not offered",
	"/forms/pdfengines/rotate":            "page rotation is not offered",
	"/forms/pdfengines/embed":             "file attachments are not offered",
	"/forms/pdfengines/watermark":         "watermarking uploaded PDFs is not offered; a conversion takes a text watermark (watermarkSource text)",
	"/forms/pdfengines/stamp":             "stamps are not offered",
	"/forms/pdfengines/bookmarks/read":    "bookmarks are made by generateDocumentOutline at conversion",
	"/forms/pdfengines/bookmarks/write":   "bookmarks are made by generateDocumentOutline at conversion",
	"/forms/pdfengines/factur-x":          "Factur-X invoices are not offered",
	"/forms/chromium/screenshot/url":      "pdfexport makes PDFs, not screenshots",
	"/forms/chromium/screenshot/html":     "pdfexport makes PDFs, not screenshots",
	"/forms/chromium/screenshot/markdown": "pdfexport makes PDFs, not screenshots",
}

func (h *handler) engineRoutes() {
	h.handle("POST /forms/pdfengines/merge", h.engine(h.merge))
	h.handle("POST /forms/pdfengines/metadata/read", h.engine(h.readMetadata))
	h.handle("POST /forms/pdfengines/metadata/write", h.engine(h.writeMetadata))
	h.handle("POST /forms/pdfengines/encrypt", h.engine(h.encrypt))
	for route, why := range refusedRoutes {
		h.handle("POST "+route, notImplemented(route, why))
	}
}

// engineJob turns the PDFs of a form into the answer's files, or its
// JSON (metadata/read).
type engineJob func(ctx context.Context, f *form, pdfs []upload) ([]upload, error)

// jsonAnswer is the "error" of an engineJob whose answer is JSON, not
// files.
type jsonAnswer struct{ body []byte }

func (j *jsonAnswer) Error() string { return "a JSON answer" }

// engine reads the form of a PDF-engine route, holds one of the
// EngineJobs slots while job runs, and answers its output: one PDF, or a
// zip of several, as Gotenberg does.
func (h *handler) engine(job engineJob) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f, err := readForm(w, r, limits{bytes: MaxEngineBytes, parts: maxEngineFiles + 16, valueBytes: 64 << 10})
		if err != nil {
			writeError(w, err)
			return
		}
		var pdfs []upload
		for _, u := range f.files {
			if strings.HasSuffix(strings.ToLower(u.name), ".pdf") {
				pdfs = append(pdfs, u)
			}
		}
		if len(pdfs) == 0 {
			writeError(w, badRequest("Invalid form data: no form file found for extensions: [.pdf]"))
			return
		}
		if len(pdfs) > maxEngineFiles {
			writeError(w, &httpError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("Invalid form data: more than %d PDFs", maxEngineFiles)})
			return
		}
		// Gotenberg takes the files in the alphabetical order of their names.
		slices.SortFunc(pdfs, func(a, b upload) int { return strings.Compare(a.name, b.name) })
		run := func(ctx context.Context) (result, error) {
			select {
			case h.engineSlot <- struct{}{}:
			case <-ctx.Done():
				return result{}, ctx.Err()
			}
			out, err := safely(func() ([]upload, error) { return job(ctx, f, pdfs) })
			<-h.engineSlot
			if err == nil {
				err = f.err()
			}
			var j *jsonAnswer
			if errors.As(err, &j) {
				return result{body: io.NopCloser(bytes.NewReader(j.body)), size: int64(len(j.body)), contentType: "application/json", fileName: "metadata.json"}, nil
			}
			if err != nil {
				return result{}, err
			}
			return pack(out, outputName(r))
		}
		if hk, ok, err := h.webhookOf(r); err != nil {
			writeError(w, err)
			return
		} else if ok {
			h.asyncEngine(w, r, hk, run)
			return
		}
		res, err := run(r.Context())
		if err != nil {
			if r.Context().Err() == nil {
				writeError(w, err)
			}
			return
		}
		writeResult(w, res)
	}
}

// safely runs job, turning a pdfcpu panic (it has some on malformed
// input) into a 400: the input is the caller's.
func safely(job func() ([]upload, error)) (out []upload, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, badRequest("The PDF could not be processed: %v", r)
		}
	}()
	return job()
}

// pack is one PDF as itself and several as a zip, as Gotenberg answers
// them; name is the answer's file name.
func pack(files []upload, name string) (result, error) {
	if len(files) == 1 {
		return result{body: io.NopCloser(bytes.NewReader(files[0].data)), size: int64(len(files[0].data)), contentType: "application/pdf", fileName: name}, nil
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		fw, err := zw.Create(f.name)
		if err == nil {
			_, err = fw.Write(f.data)
		}
		if err != nil {
			return result{}, err
		}
	}
	if err := zw.Close(); err != nil {
		return result{}, err
	}
	return result{body: io.NopCloser(&buf), size: int64(buf.Len()), contentType: "application/zip",
		fileName: strings.TrimSuffix(name, ".pdf") + ".zip"}, nil
}

// pdfConf is the engine's pdfcpu configuration.
func pdfConf() *model.Configuration { return engine.Conf() }

func pdfErr(name string, err error) error {
	return badRequest("The PDF '%s' could not be processed: %v", printable(name), err)
}

// refuseEngineFields refuses the fields of the engine routes pdfexport
// does not offer, by name.
func refuseEngineFields(f *form) {
	if f.has("pdfa") {
		f.errs = append(f.errs, unsupported("pdfa", "PDF/A conversion needs LibreOffice, which pdfexport does not run").Error())
	}
	if f.bool("pdfua", false) {
		f.errs = append(f.errs, unsupported("pdfua", "PDF/UA conversion is not offered").Error())
	}
	if f.bool("flatten", false) {
		f.errs = append(f.errs, unsupported("flatten", "flattening is not offered").Error())
	}
}

// merge is POST /forms/pdfengines/merge: the PDFs in name order, as one,
// with the metadata and encryption fields applied.
func (h *handler) merge(ctx context.Context, f *form, pdfs []upload) ([]upload, error) {
	refuseEngineFields(f)
	props := engineMetadata(f)
	user, owner := passwords(f, false)
	if err := f.err(); err != nil {
		return nil, err
	}
	rs := make([]io.ReadSeeker, len(pdfs))
	for i, p := range pdfs {
		if err := api.Validate(bytes.NewReader(p.data), pdfConf()); err != nil {
			return nil, pdfErr(p.name, err)
		}
		rs[i] = bytes.NewReader(p.data)
	}
	var out bytes.Buffer
	if err := api.MergeRaw(rs, &out, false, pdfConf()); err != nil {
		return nil, badRequest("The PDFs could not be merged: %v", err)
	}
	data, err := finish(ctx, "merged.pdf", out.Bytes(), props, user, owner, permissionBits(f))
	if err != nil {
		return nil, err
	}
	return []upload{{name: "merged.pdf", data: data}}, nil
}

// finish writes the properties, then the encryption, into a PDF.
func finish(ctx context.Context, name string, data []byte, props map[string]string, user, owner string, perms model.PermissionFlags) ([]byte, error) {
	if kw, ok := props["Keywords"]; ok {
		// pdfcpu keeps keywords apart from the other properties.
		props = maps.Clone(props)
		delete(props, "Keywords")
		var words []string
		for _, w := range strings.Split(kw, ",") {
			if w = strings.TrimSpace(w); w != "" {
				words = append(words, w)
			}
		}
		var out bytes.Buffer
		if err := api.AddKeywords(bytes.NewReader(data), &out, words, pdfConf()); err != nil {
			return nil, pdfErr(name, err)
		}
		data = out.Bytes()
	}
	if len(props) > 0 {
		var out bytes.Buffer
		if err := api.AddProperties(bytes.NewReader(data), &out, props, pdfConf()); err != nil {
			return nil, pdfErr(name, err)
		}
		data = out.Bytes()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if owner != "" {
		conf := pdfConf()
		conf.Cmd = model.ENCRYPT
		conf.Permissions = perms
		conf.UserPW, conf.OwnerPW = user, owner
		conf.EncryptUsingAES, conf.EncryptKeyLength = true, 256
		var out bytes.Buffer
		if err := api.Encrypt(bytes.NewReader(data), &out, conf); err != nil {
			return nil, pdfErr(name, err)
		}
		data = out.Bytes()
	}
	return data, nil
}

// passwords are userPassword and ownerPassword (the owner's defaults to
// the user's); required: the route needs them.
func passwords(f *form, required bool) (user, owner string) {
	user, owner = f.text("userPassword"), f.text("ownerPassword")
	if required && user == "" {
		f.errs = append(f.errs, "form field 'userPassword' is required")
	}
	if owner == "" {
		owner = user
	}
	for _, k := range []string{"userPassword", "ownerPassword"} {
		if len(f.values[k]) > 127 {
			f.invalid(k, "…", errors.New("longer than 127 bytes"))
		}
	}
	return user, owner
}

// engineMetadata is the metadata field as pdfcpu properties: the
// information dictionary's text entries; a date or a trapping flag is
// refused by name.
func engineMetadata(f *form) map[string]string {
	var raw map[string]any
	if !f.json("metadata", &raw) {
		return nil
	}
	props := map[string]string{}
	for k, v := range raw {
		switch k {
		case "Title", "Author", "Subject", "Creator", "Producer", "Keywords":
		default:
			f.errs = append(f.errs, unsupported("metadata", fmt.Sprintf("the key '%s'; pdfexport writes Title, Author, Subject, Keywords, Creator and Producer", printable(k))).Error())
			continue
		}
		switch v := v.(type) {
		case string:
			props[k] = v
		case []any:
			var words []string
			for _, e := range v {
				if s, ok := e.(string); ok {
					words = append(words, s)
				}
			}
			props[k] = strings.Join(words, ", ")
		default:
			f.invalid("metadata", f.value("metadata"), fmt.Errorf("'%s' must be a string", k))
		}
	}
	return props
}

// readMetadata is POST /forms/pdfengines/metadata/read: a JSON object of
// each PDF's information dictionary, by file name.
func (h *handler) readMetadata(ctx context.Context, f *form, pdfs []upload) ([]upload, error) {
	all := map[string]map[string]any{}
	for _, p := range pdfs {
		info, err := api.PDFInfo(bytes.NewReader(p.data), p.name, nil, false, pdfConf())
		if err != nil {
			return nil, pdfErr(p.name, err)
		}
		m := map[string]any{"PageCount": info.PageCount, "PDFVersion": info.Version}
		for k, v := range map[string]string{"Title": info.Title, "Author": info.Author, "Subject": info.Subject,
			"Creator": info.Creator, "Producer": info.Producer, "CreationDate": info.CreationDate, "ModDate": info.ModificationDate} {
			if v != "" {
				m[k] = v
			}
		}
		if len(info.Keywords) > 0 {
			m["Keywords"] = info.Keywords
		}
		all[p.name] = m
	}
	b, err := json.Marshal(all)
	if err != nil {
		return nil, err
	}
	return nil, &jsonAnswer{body: b}
}

// writeMetadata is POST /forms/pdfengines/metadata/write.
func (h *handler) writeMetadata(ctx context.Context, f *form, pdfs []upload) ([]upload, error) {
	props := engineMetadata(f)
	if !f.has("metadata") {
		f.errs = append(f.errs, "form field 'metadata' is required")
	}
	if err := f.err(); err != nil {
		return nil, err
	}
	out := make([]upload, 0, len(pdfs))
	for _, p := range pdfs {
		data, err := finish(ctx, p.name, p.data, props, "", "", 0)
		if err != nil {
			return nil, err
		}
		out = append(out, upload{name: p.name, data: data})
	}
	return out, nil
}

// encrypt is POST /forms/pdfengines/encrypt: AES-256 with userPassword
// and ownerPassword.
func (h *handler) encrypt(ctx context.Context, f *form, pdfs []upload) ([]upload, error) {
	user, owner := passwords(f, true)
	perms := permissionBits(f)
	if err := f.err(); err != nil {
		return nil, err
	}
	out := make([]upload, 0, len(pdfs))
	for _, p := range pdfs {
		data, err := finish(ctx, p.name, p.data, nil, user, owner, perms)
		if err != nil {
			return nil, err
		}
		out = append(out, upload{name: p.name, data: data})
	}
	return out, nil
}

// permissionBits are the allow* fields as PDF permission bits.
func permissionBits(f *form) model.PermissionFlags { return pdfperm.Flags(permissions(f)) }
