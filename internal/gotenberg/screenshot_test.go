package gotenberg

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"maps"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
)

// shotQueue validates as exportclient does and answers every export at
// once: completed with its artifact stored in shotStore, or failed with
// failure, as the worker records a selector that matched nothing. It
// records what was enqueued.
type shotQueue struct {
	*exportclient.Client
	failure *exportclient.Status
	mu      sync.Mutex
	got     []exportclient.Payload
}

func (q *shotQueue) EnqueuePayload(_ context.Context, p exportclient.Payload, _ ...exportclient.EnqueueOption) (exportclient.Enqueued, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.got = append(q.got, p)
	return exportclient.Enqueued{TaskID: "t1", ArtifactKey: p.ArtifactKey()}, nil
}

func (q *shotQueue) Wait(context.Context, string, time.Duration) (exportclient.Status, error) {
	if q.failure != nil {
		return *q.failure, nil
	}
	return exportclient.Status{State: exportclient.StateCompleted}, nil
}

func (q *shotQueue) Cancel(context.Context, string) (exportclient.Status, error) {
	return exportclient.Status{}, nil
}

func (q *shotQueue) last() exportclient.Payload {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.got[len(q.got)-1]
}

// shotStore holds an image under every key.
type shotStore struct{}

var shotImage = []byte("\x89PNG not really")

func (shotStore) Stat(_ context.Context, key string) (storage.Object, error) {
	return storage.Object{Key: key, Size: int64(len(shotImage))}, nil
}

func (shotStore) Open(context.Context, string) (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(shotImage)), nil
}

func newShotHandler(t *testing.T, failure *exportclient.Status) (http.Handler, *shotQueue) {
	t.Helper()
	c, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: "127.0.0.1:1"}, AllowedHosts: "docs.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	q := &shotQueue{Client: c, failure: failure}
	return New(Config{Queue: q, Store: shotStore{}, Logger: slog.New(slog.DiscardHandler)}), q
}

// shotRequest is a POST to route with the fields and files (name: bytes).
func shotRequest(t *testing.T, route string, fields map[string]string, files map[string]string) *http.Request {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		_ = mw.WriteField(k, v)
	}
	for name, data := range files {
		w, _ := mw.CreateFormFile("files", name)
		_, _ = w.Write([]byte(data))
	}
	_ = mw.Close()
	r := httptest.NewRequest(http.MethodPost, route, &buf)
	r.Header.Set("Content-Type", mw.FormDataContentType())
	r.Header.Set(outputFilenameHeader, "foo")
	return r
}

// TestScreenshotRoutes: each screenshot route enqueues an export with
// options.screenshot from the form (the page fields as the conversions
// read them) and answers the stored image with its format's type and
// extension.
func TestScreenshotRoutes(t *testing.T) {
	index := map[string]string{"index.html": "<p>x</p>"}
	for _, tc := range []struct {
		name, route string
		fields      map[string]string
		files       map[string]string
		check       func(t *testing.T, p exportclient.Payload)
		mediaType   string
		fileName    string
	}{
		{name: "html, the defaults", route: "/forms/chromium/screenshot/html", files: index, mediaType: "image/png", fileName: "foo.png",
			check: func(t *testing.T, p exportclient.Payload) {
				if s := p.Options.Screenshot; s == nil || *s != (exportclient.Screenshot{}) || p.Source.HTML != "<p>x</p>" {
					t.Errorf("screenshot %+v of %q, want the defaults of the document", s, p.Source.HTML)
				}
			}},
		{name: "html, every field", route: "/forms/chromium/screenshot/html", files: index, mediaType: "image/jpeg", fileName: "foo.jpeg",
			fields: map[string]string{"format": "jpeg", "width": "1920", "height": "1080", "clip": "true", "selector": "#main",
				"quality": "50", "optimizeForSpeed": "true", "omitBackground": "true", "deviceScaleFactor": "2",
				"emulatedMediaType": "print", "waitForExpression": "window.ready", "failOnConsoleExceptions": "true"},
			check: func(t *testing.T, p exportclient.Payload) {
				s, o := p.Options.Screenshot, p.Options
				if s.Format != "jpeg" || s.Width != 1920 || s.Height != 1080 || !s.Clip || s.Selector != "#main" || *s.Quality != 50 ||
					!s.OptimizeForSpeed || !s.OmitBackground || *s.DeviceScaleFactor != 2 {
					t.Errorf("screenshot %+v", s)
				}
				if o.Media != "print" || o.WaitFor != "window.ready" || o.Page == nil || !o.Page.FailOnConsoleExceptions || o.Paper != "" || o.PrintBackground != nil {
					t.Errorf("options %+v: want the page fields and none of a PDF's", o)
				}
			}},
		{name: "url, webp", route: "/forms/chromium/screenshot/url", mediaType: "image/webp", fileName: "foo.webp",
			fields: map[string]string{"url": "https://docs.example.com/p", "format": "webp"},
			check: func(t *testing.T, p exportclient.Payload) {
				if p.Source.URL != "https://docs.example.com/p" || !p.Force || !strings.HasSuffix(p.ArtifactKey(), ".webp") {
					t.Errorf("source %+v force %v key %s", p.Source, p.Force, p.ArtifactKey())
				}
			}},
		{name: "markdown", route: "/forms/chromium/screenshot/markdown", mediaType: "image/png", fileName: "foo.png",
			files: map[string]string{"index.html": `<main>{{ toHTML "a.md" }}</main>`, "a.md": "# Title"},
			check: func(t *testing.T, p exportclient.Payload) {
				if !strings.Contains(p.Source.HTML, "<h1>Title</h1>") {
					t.Errorf("document %q, want the markdown rendered", p.Source.HTML)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, q := newShotHandler(t, nil)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, shotRequest(t, tc.route, tc.fields, tc.files))
			if rec.Code != http.StatusOK {
				t.Fatalf("%d %q", rec.Code, rec.Body.String())
			}
			if ct := rec.Header().Get("Content-Type"); ct != tc.mediaType {
				t.Errorf("Content-Type %q, want %q", ct, tc.mediaType)
			}
			if cd := rec.Header().Get("Content-Disposition"); !strings.Contains(cd, `filename=`+tc.fileName) {
				t.Errorf("Content-Disposition %q, want %s", cd, tc.fileName)
			}
			if !bytes.Equal(rec.Body.Bytes(), shotImage) {
				t.Errorf("body %q, want the stored image", rec.Body.Bytes())
			}
			tc.check(t, q.last())
		})
	}
}

// TestScreenshotRoutes_Refused: what the screenshot routes answer 400,
// in Gotenberg's words, before anything is enqueued; and a selector the
// render found no element for.
func TestScreenshotRoutes_Refused(t *testing.T) {
	for _, tc := range []struct {
		name, route string
		fields      map[string]string
		files       map[string]string
		failure     *exportclient.Status // the export's, as recorded
		want        []string
	}{
		{name: "invalid fields, all named", route: "/forms/chromium/screenshot/html", files: map[string]string{"index.html": "x"},
			fields: map[string]string{"format": "bar", "width": "foo", "height": "-1", "clip": "foo", "quality": "101",
				"optimizeForSpeed": "foo", "omitBackground": "foo", "deviceScaleFactor": "0", "emulatedMediaType": "foo",
				"skipNetworkIdleEvent": "foo", "failOnConsoleExceptions": "foo"},
			want: []string{"'format'", "'width'", "'height'", "'clip'", "'quality'", "'optimizeForSpeed'", "'omitBackground'",
				"'deviceScaleFactor'", "'emulatedMediaType'", "'skipNetworkIdleEvent'", "'failOnConsoleExceptions'"}},
		{name: "no index.html", route: "/forms/chromium/screenshot/html", want: []string{"form file 'index.html' is required"}},
		{name: "no markdown files", route: "/forms/chromium/screenshot/markdown", want: []string{"form file 'index.html' is required"}},
		{name: "no url", route: "/forms/chromium/screenshot/url", want: []string{"form field 'url' is required"}},
		{name: "a file URL", route: "/forms/chromium/screenshot/url", fields: map[string]string{"url": "file:///tmp/index.html"},
			want: []string{"file:// URLs are not accepted on this route"}},
		{name: "a host off the allowlist", route: "/forms/chromium/screenshot/url", fields: map[string]string{"url": "https://elsewhere.example.net/"},
			want: []string{"form field 'url' is invalid"}},
		{name: "a selector of no element", route: "/forms/chromium/screenshot/html", files: map[string]string{"index.html": "x"},
			fields: map[string]string{"selector": "#nope"},
			failure: &exportclient.Status{State: exportclient.StateFailed, Kind: spec.FailureNoElement,
				Error:  "rendering m/v/0123456789abcdef.png: screenshot selector matched no element: the selector '#nope' matched no element with a visible box",
				Detail: &exportclient.FailureDetail{Selector: "#nope"}},
			want: []string{"The selector '#nope' (selector) matched no element with a visible box"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, q := newShotHandler(t, tc.failure)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, shotRequest(t, tc.route, tc.fields, tc.files))
			if rec.Code != http.StatusBadRequest || rec.Header().Get("Content-Type") != "text/plain; charset=UTF-8" {
				t.Fatalf("%d %q (%s), want a plain-text 400", rec.Code, rec.Body.String(), rec.Header().Get("Content-Type"))
			}
			for _, w := range tc.want {
				if !strings.Contains(rec.Body.String(), w) {
					t.Errorf("answer %q does not say %q", rec.Body.String(), w)
				}
			}
			if n := len(q.got); (tc.failure == nil) != (n == 0) {
				t.Errorf("%d exports enqueued", n)
			}
		})
	}
}

// TestScreenshotAnswerType: a PDF's key still answers as a PDF
// named .pdf; an image's name takes its extension for the PDF's.
func TestScreenshotAnswerType(t *testing.T) {
	for _, tc := range []struct{ key, name, mediaType, fileName string }{
		{"gotenberg/v/0123456789abcdef.pdf", "foo.pdf", "application/pdf", "foo.pdf"},
		{"gotenberg/v/0123456789abcdef.png", "foo.pdf", "image/png", "foo.png"},
		{"gotenberg/v/0123456789abcdef.jpeg", "foo.pdf", "image/jpeg", "foo.jpeg"},
	} {
		if mt, fn := answerType(tc.key, tc.name); mt != tc.mediaType || fn != tc.fileName {
			t.Errorf("answerType(%s, %s) = %s %s, want %s %s", tc.key, tc.name, mt, fn, tc.mediaType, tc.fileName)
		}
	}
}

// TestContractScreenshotFields: the fields the screenshot routes read
// are exactly the contract's ScreenshotFields.
func TestContractScreenshotFields(t *testing.T) {
	c := readContract(t)
	f := &form{values: map[string]string{}}
	screenshotOptions(f, &exportclient.Payload{})
	read := slices.Sorted(maps.Keys(f.read))
	want := slices.Sorted(maps.Keys(c.fields("ScreenshotFields")))
	if !slices.Equal(read, want) {
		t.Errorf("fields read:\n%v\nfields in the contract:\n%v", read, want)
	}
	for _, route := range []string{"/forms/chromium/screenshot/url", "/forms/chromium/screenshot/html", "/forms/chromium/screenshot/markdown"} {
		if _, ok := c.Paths[route]; !ok {
			t.Errorf("%s is served but not in the contract", route)
		}
	}
}
