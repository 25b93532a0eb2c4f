package gotenberg

import (
	"net/http"
	"strconv"
	"time"
)

// A URL's page can change between two conversions, so a URL route renders
// afresh unless the caller opts in to reuse with one of these headers:
//
//   - ReuseVersionHeader names the page's version (a release, a revision,
//     an ETag): conversions naming the same version of the same URL with
//     the same options share one PDF.
//   - ReuseMaxAgeHeader (seconds, or a duration such as "10m") accepts a
//     PDF made at most that long ago: conversions share one PDF per
//     window of that length (aligned to the Unix epoch).
const (
	ReuseVersionHeader = "Pdfexport-Reuse-Version"
	ReuseMaxAgeHeader  = "Pdfexport-Reuse-Max-Age"
)

// Bounds of the reuse headers.
const (
	maxReuseVersionBytes = 128
	maxReuseAge          = 30 * 24 * time.Hour
)

// reuse is a conversion's reuse: the token its artifact's version hashes,
// and whether it renders even when that artifact is stored.
type reuse struct {
	token string
	force bool
}

// fileReuse is the reuse of a conversion of uploaded files: their bytes are
// the content, so a stored PDF of the same bytes is the same PDF.
var fileReuse = reuse{token: "content"}

// urlReuse is a URL conversion's reuse, from the headers of r at now.
func urlReuse(r *http.Request, now time.Time) (reuse, error) {
	v, age := r.Header.Get(ReuseVersionHeader), r.Header.Get(ReuseMaxAgeHeader)
	switch {
	case v != "" && age != "":
		return reuse{}, badRequest("Send %s or %s, not both", ReuseVersionHeader, ReuseMaxAgeHeader)
	case v != "":
		if len(v) > maxReuseVersionBytes || printable(v) != v {
			return reuse{}, badRequest("%s must be printable and at most %d bytes", ReuseVersionHeader, maxReuseVersionBytes)
		}
		return reuse{token: "version " + v}, nil
	case age != "":
		d, err := time.ParseDuration(age)
		if err != nil {
			n, nerr := strconv.Atoi(age)
			if nerr != nil {
				return reuse{}, badRequest("%s must be a number of seconds or a duration such as 10m, got '%s'", ReuseMaxAgeHeader, printable(age))
			}
			d = time.Duration(n) * time.Second
		}
		if d < time.Second || d > maxReuseAge {
			return reuse{}, badRequest("%s must be from 1s to %s, got %s", ReuseMaxAgeHeader, maxReuseAge, d)
		}
		window := now.UnixNano() / int64(d)
		return reuse{token: "max-age " + d.String() + " window " + strconv.FormatInt(window, 10)}, nil
	}
	// Fresh: one artifact per URL and options, rendered again each time.
	return reuse{token: "fresh", force: true}, nil
}
