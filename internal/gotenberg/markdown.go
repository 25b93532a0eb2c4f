package gotenberg

import (
	"bytes"
	"net/http"
	"regexp"
	"strings"

	"github.com/yuin/goldmark"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"
)

// markdown renders CommonMark with GitHub's tables, strikethrough and
// autolinks; raw HTML passes through, as in the index.html around it,
// which the worker prints under the same rules either way.
var markdown = goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(html.WithUnsafe()))

// toHTMLAction is Gotenberg's template action {{ toHTML "file.md" }}.
// index.html is not run as a Go template: that is a language (loops,
// variables) a caller's file should not get to run in bin/api. This one
// action is replaced, and any other action is refused.
var toHTMLAction = regexp.MustCompile(`\{\{-?\s*toHTML\s+"([^"]+)"\s*-?\}\}`)

// convertMarkdown is POST /forms/chromium/convert/markdown: index.html
// whose {{ toHTML "x.md" }} actions are the uploaded markdown files
// rendered, then converted as an HTML document.
func (h *handler) convertMarkdown(w http.ResponseWriter, r *http.Request) {
	h.convert(w, r, func(r *http.Request, f *form) (conversion, error) {
		index, ok := f.file("index.html")
		if !ok {
			chromiumOptions(f, &exportclient.Payload{}, "")
			f.errs = append(f.errs, "form file 'index.html' is required")
			return conversion{}, nil
		}
		doc, err := expandMarkdown(index.data, f)
		if err != nil {
			return conversion{}, err
		}
		return h.document(f, "markdown", doc)
	})
}

// expandMarkdown replaces each toHTML action of index by its file
// rendered.
func expandMarkdown(index []byte, f *form) ([]byte, error) {
	var failed error
	out := toHTMLAction.ReplaceAllFunc(index, func(m []byte) []byte {
		name := string(toHTMLAction.FindSubmatch(m)[1])
		u, ok := f.file(name)
		if !ok || !strings.HasSuffix(strings.ToLower(name), ".md") {
			if failed == nil {
				failed = badRequest("Invalid form data: index.html asks for '%s' (toHTML), which is not an uploaded .md file", printable(name))
			}
			return nil
		}
		var buf bytes.Buffer
		if err := markdown.Convert(u.data, &buf); err != nil && failed == nil {
			failed = badRequest("Invalid form data: the markdown file '%s' could not be rendered: %v", printable(name), err)
		}
		return buf.Bytes()
	})
	if failed != nil {
		return nil, failed
	}
	// Only index.html's own actions are judged: the markdown's text may
	// hold braces.
	if rest := toHTMLAction.ReplaceAll(index, nil); bytes.Contains(rest, []byte("{{")) {
		return nil, badRequest("Invalid form data: index.html holds a template action other than {{ toHTML \"file.md\" }}, the only one pdfexport supports")
	}
	if len(toHTMLAction.FindAll(index, -1)) == 0 {
		return nil, badRequest("Invalid form data: index.html has no {{ toHTML \"file.md\" }} action")
	}
	return out, nil
}
