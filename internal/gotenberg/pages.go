package gotenberg

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// convertURL is POST /forms/chromium/convert/url: the url field, on
// ALLOWED_HOSTS like every export's, printed with the form's options.
func (h *handler) convertURL(w http.ResponseWriter, r *http.Request) {
	h.convert(w, r, func(r *http.Request, f *form) (conversion, error) {
		if !f.has("url") {
			return conversion{}, badRequest("Invalid form data: form field 'url' is required")
		}
		reuse, err := urlReuse(r, time.Now())
		if err != nil {
			return conversion{}, err
		}
		if u, err := url.Parse(f.value("url")); err == nil && strings.EqualFold(u.Scheme, "file") {
			return conversion{}, badRequest("file:// URLs are not accepted on this route. Use the /convert/html or /convert/markdown routes to render local HTML")
		}
		c := conversion{kind: "url", reuse: reuse}
		c.payload.Source.URL = f.value("url")
		c.payload.Force = reuse.force
		chromiumOptions(f, &c.payload, c.payload.Source.URL)
		if err := headerFooter(f, &c.payload.Options); err != nil {
			return conversion{}, err
		}
		c.files = templatesOf(f)
		return c, nil
	})
}

// convertHTML is POST /forms/chromium/convert/html: index.html with its
// assets inlined (assets.go), header.html and footer.html.
func (h *handler) convertHTML(w http.ResponseWriter, r *http.Request) {
	h.convert(w, r, func(r *http.Request, f *form) (conversion, error) {
		index, ok := f.file("index.html")
		if !ok {
			chromiumOptions(f, &exportclient.Payload{}, "") // to name every invalid field at once
			f.errs = append(f.errs, "form file 'index.html' is required")
			return conversion{}, nil
		}
		return h.document(f, "html", index.data)
	})
}

// document is the conversion of an uploaded document: its assets inlined,
// the Chromium fields, the header and footer.
func (h *handler) document(f *form, kind string, index []byte) (conversion, error) {
	doc, err := inlineAssets(index, f.files)
	if err != nil {
		return conversion{}, err
	}
	if len(doc) > spec.MaxHTMLBytes {
		return conversion{}, &httpError{status: http.StatusRequestEntityTooLarge, msg: tooLargeMsg(len(doc))}
	}
	c := conversion{kind: kind, reuse: fileReuse, files: f.files}
	c.payload.Source.HTML = doc
	chromiumOptions(f, &c.payload, "")
	if err := headerFooter(f, &c.payload.Options); err != nil {
		return conversion{}, err
	}
	return c, nil
}

// headerFooter sets the options' templates from header.html and
// footer.html, their images inlined: Chromium prints them with the same
// classes (pageNumber, totalPages, title, date, url) Gotenberg documents.
func headerFooter(f *form, o *exportclient.Options) error {
	for _, t := range []struct {
		name string
		dst  *string
	}{{"header.html", &o.HeaderHTML}, {"footer.html", &o.FooterHTML}} {
		u, ok := f.file(t.name)
		if !ok {
			continue
		}
		html, err := inlineAssets(u.data, f.files)
		if err != nil {
			return err
		}
		if len(html) > spec.MaxTemplateBytes {
			return &httpError{status: http.StatusRequestEntityTooLarge,
				msg: "Invalid form data: form file '" + t.name + "' is larger than 64 KiB (65536 bytes) with its images inlined"}
		}
		*t.dst = html
	}
	return nil
}

// templatesOf are the header and footer files of a URL conversion, the
// only files it reads.
func templatesOf(f *form) []upload {
	var out []upload
	for _, n := range []string{"header.html", "footer.html"} {
		if u, ok := f.file(n); ok {
			out = append(out, u)
		}
	}
	return out
}
