package gotenberg

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// Gotenberg's screenshot routes are exports like its conversions: the
// same sources and page fields, options.screenshot instead of the PDF's
// options, one image per distinct request rendered behind the render gate
// and answered from storage with its own Content-Type and extension.

func (h *handler) screenshotRoutes() {
	h.handle("POST /forms/chromium/screenshot/url", h.screenshotURL)
	h.handle("POST /forms/chromium/screenshot/html", h.screenshotHTML)
	h.handle("POST /forms/chromium/screenshot/markdown", h.screenshotMarkdown)
}

// screenshotURL is POST /forms/chromium/screenshot/url: the url field's
// page, reused as convertURL's PDF is (reuse.go).
func (h *handler) screenshotURL(w http.ResponseWriter, r *http.Request) {
	h.convert(w, r, func(r *http.Request, f *form) (conversion, error) {
		if !f.has("url") {
			screenshotOptions(f, &exportclient.Payload{})
			f.errs = append(f.errs, "form field 'url' is required")
			return conversion{shot: true}, nil
		}
		pageURL := f.value("url")
		if u, err := url.Parse(pageURL); err == nil && strings.EqualFold(u.Scheme, "file") {
			return conversion{}, badRequest("file:// URLs are not accepted on this route. Use the /convert/html or /convert/markdown routes to render local HTML")
		}
		reuse, err := urlReuse(r, time.Now())
		if err != nil {
			return conversion{}, err
		}
		c := conversion{kind: "shot-url", reuse: reuse, shot: true}
		c.payload.Source.URL = pageURL
		c.payload.Force = reuse.force
		screenshotOptions(f, &c.payload)
		return c, nil
	})
}

// screenshotHTML is POST /forms/chromium/screenshot/html: index.html with
// its assets inlined, as convertHTML's.
func (h *handler) screenshotHTML(w http.ResponseWriter, r *http.Request) {
	h.convert(w, r, func(r *http.Request, f *form) (conversion, error) {
		index, ok := f.file("index.html")
		if !ok {
			screenshotOptions(f, &exportclient.Payload{}) // to name every invalid field at once
			f.errs = append(f.errs, "form file 'index.html' is required")
			return conversion{shot: true}, nil
		}
		return screenshotDocument(f, "shot-html", index.data)
	})
}

// screenshotMarkdown is POST /forms/chromium/screenshot/markdown:
// index.html with its toHTML actions rendered, as convertMarkdown's.
func (h *handler) screenshotMarkdown(w http.ResponseWriter, r *http.Request) {
	h.convert(w, r, func(r *http.Request, f *form) (conversion, error) {
		index, ok := f.file("index.html")
		if !ok {
			screenshotOptions(f, &exportclient.Payload{})
			f.errs = append(f.errs, "form file 'index.html' is required")
			return conversion{shot: true}, nil
		}
		doc, err := expandMarkdown(index.data, f)
		if err != nil {
			return conversion{}, err
		}
		return screenshotDocument(f, "shot-markdown", doc)
	})
}

// screenshotDocument is the screenshot of an uploaded document, its
// assets inlined.
func screenshotDocument(f *form, kind string, index []byte) (conversion, error) {
	doc, err := inlineAssets(index, f.files)
	if err != nil {
		return conversion{}, err
	}
	if len(doc) > spec.MaxHTMLBytes {
		return conversion{}, &httpError{status: http.StatusRequestEntityTooLarge, msg: tooLargeMsg(len(doc))}
	}
	c := conversion{kind: kind, reuse: fileReuse, files: f.files, shot: true}
	c.payload.Source.HTML = doc
	screenshotOptions(f, &c.payload)
	return c, nil
}

// screenshotOptions reads the screenshot routes' fields: the page fields
// the conversions share (pageFields) and the image's own.
func screenshotOptions(f *form, p *exportclient.Payload) {
	pageFields(f, p)
	s := &exportclient.Screenshot{Format: f.oneOf("format", spec.ScreenshotFormats...)}
	s.Width = intField(f, "width", 0, spec.MaxScreenshotSide)
	s.Height = intField(f, "height", 0, spec.MaxScreenshotSide)
	s.Clip = f.bool("clip", false)
	s.Selector = f.text("selector")
	if f.has("quality") {
		q := intField(f, "quality", 0, 100)
		s.Quality = &q
	}
	if d := f.float("deviceScaleFactor", 1); d != 1 {
		if d <= 0 || d > spec.MaxScreenshotScale {
			f.invalid("deviceScaleFactor", f.value("deviceScaleFactor"), fmt.Errorf("must be above 0 and at most %g", spec.MaxScreenshotScale))
		} else {
			s.DeviceScaleFactor = &d
		}
	}
	s.OptimizeForSpeed = f.bool("optimizeForSpeed", false)
	s.OmitBackground = f.bool("omitBackground", false)
	p.Options.Screenshot = s
}

// pageFields reads the fields of the page itself that every Chromium
// route shares: its media, when it is ready, its cookies and headers,
// what fails it. They mean what they mean in chromiumOptions.
func pageFields(f *form, p *exportclient.Payload) {
	page := &exportclient.PageOptions{}
	loadFields(f, &p.Options, page)
	if !reflect.DeepEqual(*page, exportclient.PageOptions{}) {
		p.Options.Page = page
	}
}

// intField parses an integer field from lo to hi; 0 when not sent or
// invalid (which f's errors name).
func intField(f *form, key string, lo, hi int) int {
	v := f.value(key)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	switch {
	case err != nil:
		f.invalid(key, v, err)
		return 0
	case n < lo || n > hi:
		f.invalid(key, v, fmt.Errorf("must be from %d to %d", lo, hi))
		return 0
	}
	return n
}

// answerType is the Content-Type and download name of the artifact under
// key, the download named name (outputName's, with ".pdf"): an image
// takes its format's extension instead.
func answerType(key, name string) (mediaType, fileName string) {
	mediaType, ext := spec.ArtifactType(key)
	return mediaType, strings.TrimSuffix(name, ".pdf") + ext
}
