package gotenberg

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/net/html"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// The worker prints an uploaded document as inline HTML (on about:blank),
// where a relative reference resolves to nothing. So bin/api inlines the
// uploaded files the document names, as data: URIs: in src, href, poster,
// srcset and style attributes, in <style> elements, and in the url() and
// @import of uploaded stylesheets (which are inlined themselves). The
// document's bytes are then its whole content, which is what the artifact
// key hashes. A reference built by a script at run time (fetch("data.json"),
// an img.src set in code) is not seen and does not load.

// urlAttrs are the attributes whose value is one URL.
var urlAttrs = map[string]bool{"src": true, "href": true, "poster": true, "data": true, "xlink:href": true, "background": true}

// maxCSSDepth bounds @import chains between uploaded stylesheets (and so
// their cycles).
const maxCSSDepth = 4

func tooLargeMsg(n int) string {
	return fmt.Sprintf("The document with its assets inlined is %d bytes, more than the %d bytes (2 MiB) a document may be", n, spec.MaxHTMLBytes)
}

// assets are the uploaded files by name; spent counts the bytes inlined
// so far, nested stylesheets at each level, and over is set once the
// document cannot fit any more.
type assets struct {
	files map[string][]byte
	spent int
	over  bool
	// done are the data URIs made, by depth and name: a file named many
	// times is encoded (and its stylesheet inlined) once.
	done map[string]string
}

// maxInlineWork bounds spent: a document of MaxHTMLBytes holds at most
// that much inlined data, counted again for each level of stylesheets it
// is nested in (base64 grows it a third a level), so past this bound it
// cannot fit, and stylesheets importing each other many times over stop
// here instead of growing without bound.
const maxInlineWork = 4 * spec.MaxHTMLBytes

// inlineAssets returns doc with the references to uploaded files replaced
// by data: URIs. It stops with 413 once the result would pass
// spec.MaxHTMLBytes.
func inlineAssets(doc []byte, files []upload) (string, error) {
	a := &assets{files: make(map[string][]byte, len(files)), done: map[string]string{}}
	for _, f := range files {
		a.files[f.name] = f.data
	}
	var out bytes.Buffer
	z := html.NewTokenizer(bytes.NewReader(doc))
	inStyle := false
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return out.String(), nil // io.EOF: the tokenizer reads from memory
		case html.StartTagToken, html.SelfClosingTagToken:
			raw := append([]byte(nil), z.Raw()...)
			tok := z.Token()
			inStyle = tok.Data == "style" && tt == html.StartTagToken
			changed := false
			for i, at := range tok.Attr {
				var v string
				switch {
				case urlAttrs[at.Key]:
					v = a.uri(at.Val, 0)
					if v == at.Val {
						v = missingAsset(a, tok.Data, at.Key, at.Val)
					}
				case at.Key == "srcset":
					v = a.srcset(at.Val)
				case at.Key == "style":
					v = a.css(at.Val, 0)
				default:
					continue
				}
				if v != at.Val {
					tok.Attr[i].Val, changed = v, true
				}
			}
			if changed {
				out.WriteString(tok.String())
			} else {
				out.Write(raw)
			}
		case html.TextToken:
			if inStyle {
				out.WriteString(a.css(string(z.Raw()), 0))
			} else {
				out.Write(z.Raw())
			}
		default:
			if tt == html.EndTagToken {
				inStyle = false
			}
			out.Write(z.Raw())
		}
		if out.Len() > spec.MaxHTMLBytes || a.over {
			return "", &httpError{status: http.StatusRequestEntityTooLarge, msg: tooLargeMsg(max(out.Len(), spec.MaxHTMLBytes+1))}
		}
	}
}

// file is the uploaded file a reference names: a bare relative name
// ("logo.png", "./logo.png", maybe with a query or fragment), as
// Gotenberg resolves them in its one folder per conversion.
func (a *assets) file(ref string) (string, []byte, bool) {
	ref = strings.TrimSpace(ref)
	if ref == "" || strings.Contains(ref, ":") || strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, "#") {
		return "", nil, false // absolute, a scheme (data:, http:), or a fragment of the document
	}
	if i := strings.IndexAny(ref, "?#"); i >= 0 {
		ref = ref[:i]
	}
	if u, err := url.PathUnescape(ref); err == nil {
		ref = u
	}
	name := path.Clean(ref)
	data, ok := a.files[name]
	return name, data, ok
}

// uri is ref as a data: URI when it names an uploaded file, else ref.
func (a *assets) uri(ref string, depth int) string {
	name, data, ok := a.file(ref)
	if !ok || a.over {
		return ref
	}
	memo := strconv.Itoa(depth) + "/" + name
	enc, seen := a.done[memo]
	if !seen {
		typ := mime.TypeByExtension(path.Ext(name))
		if typ == "" {
			typ = http.DetectContentType(data)
		}
		if strings.HasPrefix(typ, "text/css") && depth < maxCSSDepth {
			data = []byte(a.css(string(data), depth+1))
		}
		if i := strings.IndexByte(typ, ';'); i >= 0 {
			typ = typ[:i]
		}
		if base64.StdEncoding.EncodedLen(len(data)) > spec.MaxHTMLBytes {
			a.over = true
			return ref
		}
		enc = "data:" + typ + ";base64," + base64.StdEncoding.EncodeToString(data)
		a.done[memo] = enc
	}
	if a.spent += len(enc); a.spent > maxInlineWork {
		a.over = true
		return ref
	}
	return enc
}

// srcset inlines each candidate of a srcset ("a.png 1x, b.png 2x").
func (a *assets) srcset(v string) string {
	parts := strings.Split(v, ",")
	for i, p := range parts {
		fields := strings.Fields(p)
		if len(fields) == 0 {
			continue
		}
		fields[0] = a.uri(fields[0], 0)
		parts[i] = strings.Join(fields, " ")
	}
	return strings.Join(parts, ", ")
}

var (
	cssURL    = regexp.MustCompile(`url\(\s*(?:"([^"]*)"|'([^']*)'|([^)'"\s]*))\s*\)`)
	cssImport = regexp.MustCompile(`@import\s+(?:"([^"]*)"|'([^']*)')`)
)

// css inlines the url() and @import references of a stylesheet.
func (a *assets) css(s string, depth int) string {
	repl := func(re *regexp.Regexp, wrap func(string) string) {
		s = re.ReplaceAllStringFunc(s, func(m string) string {
			sub := re.FindStringSubmatch(m)
			ref := sub[1] + sub[2]
			if len(sub) > 3 {
				ref += sub[3]
			}
			v := a.uri(ref, depth)
			if v == ref {
				return m
			}
			return wrap(v)
		})
	}
	repl(cssURL, func(v string) string { return `url("` + v + `")` })
	repl(cssImport, func(v string) string { return `@import "` + v + `"` })
	return s
}
