package gotenberg

import (
	"net/url"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// missingAsset is ref, a value of attribute attr of element tag, when it
// does not name a file of the form: a relative reference of an element
// that loads it (a stylesheet, a script, an image) becomes a URL under
// spec.MissingFilePrefix, which the render reports as a file not found,
// as Gotenberg's folder of uploads answers a reference to no file in it.
// Any other reference is left as it is.
func missingAsset(a *assets, tag, attr, ref string) string {
	if !loadsResource(tag, attr) {
		return ref
	}
	name, _, ok := a.file(ref)
	if ok || name == "" || name == "." {
		return ref
	}
	return spec.MissingFilePrefix + (&url.URL{Path: name}).EscapedPath()
}

func loadsResource(tag, attr string) bool {
	switch tag {
	case "link", "script", "img":
		return attr == "href" || attr == "src"
	}
	return false
}
