package site

import (
	"encoding/xml"
	"fmt"
	"io"
)

// sitemapLinks reads a sitemap's <urlset> (sitemaps.org 0.9): its <loc>s
// in order, without titles (a chapter takes its printed page's). A
// sitemap index is refused: which of its sitemaps is the manual is the
// caller's to say, by giving that one's URL.
func sitemapLinks(r io.Reader) ([]link, error) {
	dec := xml.NewDecoder(r)
	// A sitemap is UTF-8 (the protocol says so); other charsets are not
	// converted.
	dec.CharsetReader = func(charset string, in io.Reader) (io.Reader, error) { return in, nil }
	var out []link
	depth := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("not a sitemap: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 1 && t.Name.Local == "sitemapindex" {
				return nil, fmt.Errorf("a sitemap index, not a sitemap: give the URL of the sitemap of the manual")
			}
			if depth == 1 && t.Name.Local != "urlset" {
				return nil, fmt.Errorf("not a sitemap: its root is <%s>, not <urlset>", t.Name.Local)
			}
			if t.Name.Local == "loc" && depth == 3 {
				var loc string
				if err := dec.DecodeElement(&loc, &t); err != nil {
					return nil, fmt.Errorf("not a sitemap: %w", err)
				}
				depth--
				out = append(out, link{href: loc})
			}
		case xml.EndElement:
			depth--
		}
	}
}
