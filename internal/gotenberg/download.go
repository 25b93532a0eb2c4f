package gotenberg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pdfexport/pdfexport/internal/render/egress"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// downloadFrom: the files a route takes, fetched by bin/api from the URLs
// the field lists instead of uploaded, each named by its answer's
// Content-Disposition (Gotenberg's rule). The URLs are the caller's: they
// are fetched only from hosts on ALLOWED_HOSTS, through the egress
// guard's dialer (no loopback, private or metadata address unless listed
// exactly), within the form's byte limit, a few at most.

// downloadEntry is one entry of the downloadFrom field.
type downloadEntry struct {
	URL              string            `json:"url"`
	ExtraHTTPHeaders map[string]string `json:"extraHttpHeaders"`
	// Embedded and Field route the file to a form bucket other than the
	// route's files (embeds, a watermark or stamp file).
	Embedded bool   `json:"embedded"`
	Field    string `json:"field"`
}

// Bounds of downloadFrom.
const (
	maxDownloads       = 16
	maxDownloadHeaders = spec.MaxPageHeaders
	downloadTimeout    = 30 * time.Second
	maxRedirects       = 5
)

// errDownloadsOff: bin/api was given no download client.
var errDownloadsOff = errors.New("downloads are off")

// NewDownloadClient is the client downloadFrom fetches with: every
// connection through an egress dialer of allowed, redirects bounded.
func NewDownloadClient(allowed egress.Dialer) *http.Client {
	return &http.Client{
		Transport: &http.Transport{DialContext: allowed.DialContext, Proxy: nil, ResponseHeaderTimeout: downloadTimeout},
		Timeout:   downloadTimeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("more than %d redirects", maxRedirects)
			}
			return nil
		},
	}
}

// downloads fetches the files of f's downloadFrom field into f's files,
// within budget bytes in all.
func (h *handler) downloads(ctx context.Context, f *form, budget int64) error {
	raw, ok := f.values["downloadFrom"]
	f.mark("downloadFrom")
	if !ok || strings.TrimSpace(raw) == "" {
		return nil
	}
	var entries []downloadEntry
	if err := json.Unmarshal([]byte(raw), &entries); err != nil {
		return badRequest("Invalid 'downloadFrom' form field value: %s", err)
	}
	if len(entries) > maxDownloads {
		return badRequest("Invalid 'downloadFrom' form field value: more than %d entries", maxDownloads)
	}
	if h.cfg.Download == nil && len(entries) > 0 {
		return unsupported("downloadFrom", errDownloadsOff.Error()+" on this server")
	}
	for _, e := range f.files {
		budget -= int64(len(e.data))
	}
	for i, e := range entries {
		u, err := h.download(ctx, i, e, budget)
		if err != nil {
			return err
		}
		if _, dup := f.file(u.name); dup {
			return badRequest("Invalid form data: the file '%s' is sent twice", u.name)
		}
		budget -= int64(len(u.data))
		f.files = append(f.files, u)
		if field := bucketOf(e); field != "" {
			if f.buckets == nil {
				f.buckets = map[string]string{}
			}
			f.buckets[u.name] = field
		}
	}
	return nil
}

// download fetches entry i, at most budget bytes.
func (h *handler) download(ctx context.Context, i int, e downloadEntry, budget int64) (upload, error) {
	if strings.TrimSpace(e.URL) == "" {
		return upload{}, badRequest("Invalid 'downloadFrom' form field entry %d: URL must be set", i)
	}
	shown := printable(e.URL)
	pu, err := url.Parse(e.URL)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		return upload{}, badRequest("Invalid 'downloadFrom' form field entry %d: the URL must be http or https with a host", i)
	}
	if len(e.ExtraHTTPHeaders) > maxDownloadHeaders {
		return upload{}, badRequest("Invalid 'downloadFrom' form field entry %d: more than %d headers", i, maxDownloadHeaders)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.URL, nil)
	if err != nil {
		return upload{}, badRequest("Invalid 'downloadFrom' form field entry %d: %v", i, err)
	}
	req.Header.Set("User-Agent", "Gotenberg")
	for k, v := range e.ExtraHTTPHeaders {
		if err := spec.CheckHeader(k, v); err != nil {
			return upload{}, badRequest("Invalid 'downloadFrom' form field entry %d: %v", i, err)
		}
		req.Header.Set(k, v)
	}
	resp, err := h.cfg.Download.Do(req)
	if err != nil {
		var refused *egress.Refusal
		if errors.As(err, &refused) {
			return upload{}, &httpError{status: http.StatusForbidden, msg: fmt.Sprintf("Unable to download file from '%s': %s (ALLOWED_HOSTS)", shown, refused.Reason)}
		}
		return upload{}, badRequest("Unable to download file from '%s': %s", shown, printable(err.Error()))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return upload{}, badRequest("Unable to download file from '%s': got status: '%s'", shown, printable(resp.Status))
	}
	cd := resp.Header.Get("Content-Disposition")
	if cd == "" {
		return upload{}, badRequest("No 'Content-Disposition' header from '%s'", shown)
	}
	_, params, err := mime.ParseMediaType(cd)
	if err != nil || params["filename"] == "" {
		return upload{}, badRequest("Invalid 'Content-Disposition' header '%s' from '%s': no filename", printable(cd), shown)
	}
	name, err := baseName(params["filename"])
	if err != nil {
		return upload{}, err
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max(budget, 0)+1))
	if err != nil {
		return upload{}, badRequest("Unable to download file from '%s': %s", shown, printable(err.Error()))
	}
	if int64(len(data)) > budget {
		return upload{}, &httpError{status: http.StatusRequestEntityTooLarge,
			msg: fmt.Sprintf("Unable to download file from '%s': the files are larger than %d bytes in all", shown, spec.MaxPayloadBytes)}
	}
	return upload{name: name, data: data}, nil
}

// bucketOf is the form bucket of e's file: "" for the route's files.
func bucketOf(e downloadEntry) string {
	if e.Embedded {
		return "embedded"
	}
	return e.Field
}
