package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/api/apitest"
	"github.com/pdfexport/pdfexport/internal/delivery/manuals"
	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// countingStore counts the reads of a real backend, to show that a refused
// link reads nothing.
type countingStore struct {
	storage.Backend
	reads atomic.Int64
}

func (c *countingStore) Stat(ctx context.Context, key string) (storage.Object, error) {
	c.reads.Add(1)
	return c.Backend.Stat(ctx, key)
}

func (c *countingStore) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	c.reads.Add(1)
	return c.Backend.Open(ctx, key)
}

// PresignInline passes through to an S3 backend, as bin/api's store is
// the backend itself.
func (c *countingStore) PresignInline(ctx context.Context, key, fileName string) (string, error) {
	p, ok := c.Backend.(inlinePresigner)
	if !ok {
		return "", fmt.Errorf("%T cannot presign", c.Backend)
	}
	return p.PresignInline(ctx, key, fileName)
}

func newLinkSecret(t testing.TB) string {
	t.Helper()
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(k)
}

const linkManuals = `
manuals:
  ops-guide:
    url: https://docs.example.com/ops-guide/{version}/print
    options: {paper: A4, outline: true}
    allow_query: [paper, landscape]
  public-guide:
    url: https://docs.example.com/public/{version}
    links: public
    versions: '[0-9]+'
`

type linkEnv struct {
	srv      *httptest.Server
	handler  http.Handler // the API without the contract check
	redis    *testsupport.Redis
	meter    *redis.Client // counts commands
	store    *countingStore
	client   *exportclient.Client
	registry *manuals.Watcher
	path     string // of MANUALS_FILE
}

type linkOpts struct {
	secrets   []string // LINK_SECRET entries
	linkWait  time.Duration
	token     string
	store     storage.Backend // nil: file storage in a temporary directory
	publicURL string
}

func newLinkEnv(t testing.TB, o linkOpts) *linkEnv {
	t.Helper()
	redis := testsupport.StartRedis(t)
	c, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, AllowedHosts: "docs.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	backend := o.store
	if backend == nil {
		if backend, err = storage.NewFile(t.TempDir(), ""); err != nil {
			t.Fatal(err)
		}
	}
	store := &countingStore{Backend: backend}
	path := filepath.Join(t.TempDir(), "manuals.yaml")
	if err := os.WriteFile(path, []byte(linkManuals), 0o600); err != nil {
		t.Fatal(err)
	}
	hosts, err := allowlist.Parse("docs.example.com")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := manuals.Open(path, manuals.Rules{Hosts: spec.Hosts{Sources: hosts}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var keys [][]byte
	if len(o.secrets) > 0 {
		if keys, err = spec.ParseLinkSecrets(strings.Join(o.secrets, " ")); err != nil {
			t.Fatal(err)
		}
	}
	h := New(Config{Client: c, Token: o.token, Store: store, Manuals: reg, LinkKeys: keys, LinkWait: o.linkWait, PublicURL: o.publicURL, Logger: slog.New(slog.DiscardHandler)})
	srv := httptest.NewServer(apitest.Contract(t, h))
	t.Cleanup(srv.Close)
	meter := redis.Client()
	t.Cleanup(func() { _ = meter.Close() })
	if err := meter.Ping(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	return &linkEnv{srv: srv, handler: h, redis: redis, meter: meter, store: store, client: c, registry: reg, path: path}
}

// storePDF stores a PDF as a worker would for the request: under its key,
// with the info object beside it.
func (e *linkEnv) storePDF(t testing.TB, r spec.Request, body []byte) storage.Object {
	t.Helper()
	key := r.ArtifactKey()
	obj, err := e.store.Create(t.Context(), key, bytes.NewReader(body), storage.PutOptions{
		Metadata: map[string]string{"manual-id": r.ManualID, "version": r.Version}, FileName: r.ManualID + "-" + r.Version + ".pdf"})
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]any{"etag": obj.ETag, "pages": 3, "bytes": obj.Size})
	if _, err := e.store.Create(t.Context(), key+".json", bytes.NewReader(info), storage.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	return obj
}

func (e *linkEnv) request(t testing.TB, manualID, version string, query url.Values) spec.Request {
	t.Helper()
	m, ok := e.registry.Current().Get(manualID)
	if !ok {
		t.Fatalf("no manual %s", manualID)
	}
	r, err := m.Request(version, query)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tasks counts the export tasks of every queue.
func (e *linkEnv) tasks(t *testing.T) int {
	t.Helper()
	insp := asynq.NewInspectorFromRedisClient(e.redis.Client())
	queues, err := insp.Queues()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, q := range queues {
		info, err := insp.GetQueueInfo(q)
		if err != nil {
			t.Fatal(err)
		}
		n += info.Size
	}
	return n
}

// commands is the number of Redis commands since the last call (the
// measurement's own INFO and CONFIG left out).
func (e *linkEnv) commands(t *testing.T) int {
	t.Helper()
	calls := redisCalls(t, e.meter)
	if err := e.meter.ConfigResetStat(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	return calls
}

// redisCalls counts the calls of INFO commandstats through meter, a client
// whose connection is up already (its HELLO counted before).
func redisCalls(t *testing.T, meter *redis.Client) int {
	t.Helper()
	info, err := meter.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok || name == "cmdstat_info" || name == "cmdstat_config|resetstat" || name == "cmdstat_config" {
			continue
		}
		var c int
		fmt.Sscanf(rest, "%d", &c)
		n += c
	}
	return n
}

func get(t *testing.T, rawURL string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", rawURL, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

func sign(t *testing.T, base, secret string, l exportclient.Link) string {
	t.Helper()
	u, err := exportclient.SignLink(base, secret, l)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestLink_StoredPDFAnsweredFromStorageAlone: a signed link of a stored PDF
// streams it (inline, with its name), with Range and 304, and costs no
// task and no Redis command.
func TestLink_StoredPDFAnsweredFromStorageAlone(t *testing.T) {
	secret := newLinkSecret(t)
	e := newLinkEnv(t, linkOpts{secrets: []string{secret}})
	pdf := []byte("%PDF-1.7\n" + strings.Repeat("x", 4096) + "\n%%EOF\n")
	obj := e.storePDF(t, e.request(t, "ops-guide", "2026.11", nil), pdf)
	link := sign(t, e.srv.URL, secret, exportclient.Link{ManualID: "ops-guide", Version: "2026.11", Expires: time.Now().Add(time.Hour)})
	e.commands(t)

	resp, body := get(t, link, nil)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, pdf) {
		t.Fatalf("GET: %d, %d bytes", resp.StatusCode, len(body))
	}
	if got, want := resp.Header.Get("Content-Disposition"), `inline; filename=ops-guide-2026.11.pdf`; got != want {
		t.Errorf("Content-Disposition %q, want %q", got, want)
	}
	if got := resp.Header.Get("ETag"); got != `"`+obj.ETag+`"` {
		t.Errorf("ETag %q, want %q", got, obj.ETag)
	}
	resp, body = get(t, link, http.Header{"Range": {"bytes=0-7"}})
	if resp.StatusCode != http.StatusPartialContent || string(body) != "%PDF-1.7" {
		t.Errorf("Range: %d %q", resp.StatusCode, body)
	}
	resp, _ = get(t, link, http.Header{"If-None-Match": {`"` + obj.ETag + `"`}})
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: %d, want 304", resp.StatusCode)
	}
	head, err := http.Head(link)
	if err != nil {
		t.Fatal(err)
	}
	head.Body.Close()
	if head.StatusCode != http.StatusOK || head.ContentLength != int64(len(pdf)) {
		t.Errorf("HEAD of the GET link: %d, %d bytes", head.StatusCode, head.ContentLength)
	}
	if n := e.commands(t); n != 0 {
		t.Errorf("four link hits cost %d Redis commands, want 0", n)
	}
	if n := e.tasks(t); n != 0 {
		t.Errorf("%d tasks queued, want 0", n)
	}
	// A public manual needs no signature.
	e.storePDF(t, e.request(t, "public-guide", "1", nil), pdf)
	if resp, _ := get(t, e.srv.URL+"/v1/manuals/public-guide/1.pdf", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("public manual: %d", resp.StatusCode)
	}
}

// TestLink_RefusedLinksDoNoWork: a missing, tampered or expired signature
// is a 403 that neither reads storage nor enqueues.
func TestLink_RefusedLinksDoNoWork(t *testing.T) {
	secret := newLinkSecret(t)
	e := newLinkEnv(t, linkOpts{secrets: []string{secret}, token: "api-token-0123456789"})
	good := sign(t, e.srv.URL, secret, exportclient.Link{ManualID: "ops-guide", Version: "2026.11", Paper: "Letter", Expires: time.Now().Add(time.Hour)})
	tamper := func(f func(q url.Values)) string {
		u, _ := url.Parse(good)
		q := u.Query()
		f(q)
		u.RawQuery = q.Encode()
		return u.String()
	}
	for _, tc := range []struct {
		name, url string
		header    http.Header
	}{
		{"missing signature", e.srv.URL + "/v1/manuals/ops-guide/2026.11.pdf", nil},
		{"other version", strings.Replace(good, "2026.11.pdf", "2026.12.pdf", 1), nil},
		{"changed paper", tamper(func(q url.Values) { q.Set("paper", "A3") }), nil},
		{"added landscape", tamper(func(q url.Values) { q.Set("landscape", "true") }), nil},
		{"longer expiry", tamper(func(q url.Values) { q.Set("expires", "9999999999") }), nil},
		{"garbage signature", tamper(func(q url.Values) { q.Set("signature", "AAAA") }), nil},
		{"expired", sign(t, e.srv.URL, secret, exportclient.Link{ManualID: "ops-guide", Version: "2026.11", Expires: time.Now().Add(-time.Second)}), nil},
		{"other key", sign(t, e.srv.URL, newLinkSecret(t), exportclient.Link{ManualID: "ops-guide", Version: "2026.11"}), nil},
		{"wrong token", e.srv.URL + "/v1/manuals/ops-guide/2026.11.pdf", http.Header{"Authorization": {"Bearer not-the-token-000000"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.store.reads.Load()
			resp, body := get(t, tc.url, tc.header)
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), `"error"`) {
				t.Fatalf("%d %s, want 403 with a JSON error", resp.StatusCode, body)
			}
			if n := e.store.reads.Load() - before; n != 0 {
				t.Errorf("%d storage reads", n)
			}
			if n := e.tasks(t); n != 0 {
				t.Errorf("%d tasks queued", n)
			}
		})
	}
	// An API token opens a link; the PDF is not stored, so it is enqueued.
	e2 := newLinkEnv(t, linkOpts{token: "api-token-0123456789", linkWait: time.Second})
	resp, _ := get(t, e2.srv.URL+"/v1/manuals/ops-guide/1.pdf", http.Header{"Authorization": {"Bearer api-token-0123456789"}})
	if resp.StatusCode != http.StatusAccepted || e2.tasks(t) != 1 {
		t.Errorf("link with the API token: %d, %d tasks; want 202 and one task", resp.StatusCode, e2.tasks(t))
	}
}

// TestLink_KeyRotation: a link signed with the old key works while both
// keys are configured, and stops once the old one is dropped; links are
// signed with the first.
func TestLink_KeyRotation(t *testing.T) {
	oldKey, newKey := newLinkSecret(t), newLinkSecret(t)
	oldLink := func(base string) string {
		return sign(t, base, oldKey, exportclient.Link{ManualID: "ops-guide", Version: "7", Expires: time.Now().Add(time.Hour)})
	}
	both := newLinkEnv(t, linkOpts{secrets: []string{newKey, oldKey}})
	both.storePDF(t, both.request(t, "ops-guide", "7", nil), []byte("%PDF-1.7\n%%EOF\n"))
	if resp, _ := get(t, oldLink(both.srv.URL), nil); resp.StatusCode != http.StatusOK {
		t.Errorf("old key while both are configured: %d", resp.StatusCode)
	}
	u, err := exportclient.SignLink(both.srv.URL, newKey+","+oldKey, exportclient.Link{ManualID: "ops-guide", Version: "7"})
	if err != nil {
		t.Fatal(err)
	}
	if resp, _ := get(t, u, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("signed with the list (its first key): %d", resp.StatusCode)
	}
	newOnly := newLinkEnv(t, linkOpts{secrets: []string{newKey}})
	if resp, _ := get(t, oldLink(newOnly.srv.URL), nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("old key after it was dropped: %d, want 403", resp.StatusCode)
	}
	if resp, _ := get(t, u, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("new key: %d", resp.StatusCode)
	}
}

// TestLink_BadRequests: an unknown manual is a 404, a parameter the manual
// does not allow a 400 naming it, a bad version a 400 naming the field.
func TestLink_BadRequests(t *testing.T) {
	secret := newLinkSecret(t)
	e := newLinkEnv(t, linkOpts{secrets: []string{secret}})
	for _, tc := range []struct {
		name, url string
		code      int
		field     string
	}{
		{"unknown manual", sign(t, e.srv.URL, secret, exportclient.Link{ManualID: "nope", Version: "1"}), http.StatusNotFound, "manual_id"},
		{"not .pdf", e.srv.URL + "/v1/manuals/ops-guide/1.html", http.StatusNotFound, ""},
		{"unknown parameter", e.srv.URL + "/v1/manuals/ops-guide/1.pdf?scale=2", http.StatusBadRequest, "scale"},
		{"not allowed here", e.srv.URL + "/v1/manuals/public-guide/1.pdf?paper=Letter", http.StatusBadRequest, "paper"},
		{"bad landscape", e.srv.URL + "/v1/manuals/ops-guide/1.pdf?landscape=sideways", http.StatusBadRequest, "landscape"},
		{"bad paper", sign(t, e.srv.URL, secret, exportclient.Link{ManualID: "ops-guide", Version: "1", Paper: "B9"}), http.StatusBadRequest, "options.paper"},
		{"not one of its versions", e.srv.URL + "/v1/manuals/public-guide/v9.pdf", http.StatusNotFound, "version"},
		{"bad version", sign(t, e.srv.URL, secret, exportclient.Link{ManualID: "ops-guide", Version: "-1"}), http.StatusBadRequest, "version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := get(t, tc.url, nil)
			var got apiError
			_ = json.Unmarshal(body, &got)
			if resp.StatusCode != tc.code || got.Field != tc.field || got.Error == "" {
				t.Fatalf("%d %s; want %d naming %q", resp.StatusCode, body, tc.code, tc.field)
			}
		})
	}
	if n := e.tasks(t); n != 0 {
		t.Errorf("%d tasks queued", n)
	}
}

// TestLink_RegistryReload: a manual added to MANUALS_FILE is served after
// the reload, one removed is a 404.
func TestLink_RegistryReload(t *testing.T) {
	e := newLinkEnv(t, linkOpts{})
	if resp, _ := get(t, e.srv.URL+"/v1/manuals/new-guide/1.pdf", nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("before: %d", resp.StatusCode)
	}
	doc := "manuals:\n  new-guide: {url: \"https://docs.example.com/new/{version}\", links: public}\n"
	if err := os.WriteFile(e.path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.registry.Reload(); err != nil {
		t.Fatal(err)
	}
	e.storePDF(t, e.request(t, "new-guide", "1", nil), []byte("%PDF-1.7\n%%EOF\n"))
	if resp, _ := get(t, e.srv.URL+"/v1/manuals/new-guide/1.pdf", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("after the reload: %d", resp.StatusCode)
	}
	if resp, _ := get(t, e.srv.URL+"/v1/manuals/public-guide/1.pdf", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("removed manual: %d", resp.StatusCode)
	}
}

// TestLink_NewVersionOneTaskFor50Clicks: 50 readers clicking the link of a
// version that is not stored at once make one task, and each gets a 202
// naming it once LINK_WAIT ends with no worker to render it.
func TestLink_NewVersionOneTaskFor50Clicks(t *testing.T) {
	secret := newLinkSecret(t)
	e := newLinkEnv(t, linkOpts{secrets: []string{secret}, linkWait: 2 * time.Second})
	link := sign(t, e.srv.URL, secret, exportclient.Link{ManualID: "ops-guide", Version: "2026.12", Paper: "Letter"})
	var wg sync.WaitGroup
	ids := make([]string, 50)
	codes := make([]int, 50)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, body := get(t, link, nil)
			codes[i] = resp.StatusCode
			var p linkPending
			_ = json.Unmarshal(body, &p)
			ids[i] = p.TaskID
			if resp.Header.Get("Retry-After") == "" || p.StatusURL != "/v1/exports/"+p.TaskID {
				t.Errorf("202 without Retry-After or status_url: %v %s", resp.Header, body)
			}
		}()
	}
	wg.Wait()
	for i := range 50 {
		if codes[i] != http.StatusAccepted || ids[i] != ids[0] {
			t.Fatalf("click %d: %d task %q; want 202 and task %q", i, codes[i], ids[i], ids[0])
		}
	}
	// Two windows at most (a window boundary in the test's second): the
	// render gate makes those one render.
	if n := e.tasks(t); n != 1 {
		t.Errorf("%d tasks for 50 clicks, want 1", n)
	}
	st, err := e.client.Status(t.Context(), ids[0])
	if err != nil || st.State != exportclient.StatePending {
		t.Errorf("status of the link's task: %+v %v", st, err)
	}
}

// TestLink_S3RedirectsToPresignedURL: with S3 storage a stored PDF's link
// is a 302 to a presigned URL, which serves it.
func TestLink_S3RedirectsToPresignedURL(t *testing.T) {
	srv := testsupport.StartS3(t)
	s3, err := storage.NewS3(t.Context(), storage.S3Config{Bucket: srv.Bucket, Prefix: "links/", Endpoint: srv.Endpoint(), ForcePathStyle: true, Credentials: srv.Credentials()})
	if err != nil {
		t.Fatal(err)
	}
	secret := newLinkSecret(t)
	e := newLinkEnv(t, linkOpts{secrets: []string{secret}, store: s3})
	pdf := []byte("%PDF-1.7\n%%EOF\n")
	e.storePDF(t, e.request(t, "ops-guide", "3", nil), pdf)
	e.commands(t)
	resp, _ := get(t, sign(t, e.srv.URL, secret, exportclient.Link{ManualID: "ops-guide", Version: "3"}), nil)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || !strings.Contains(loc, "X-Amz-Signature=") {
		t.Fatalf("%d Location %q; want 302 to a presigned URL", resp.StatusCode, loc)
	}
	resp, body := get(t, loc, nil)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, pdf) {
		t.Errorf("presigned URL: %d %q", resp.StatusCode, body)
	}
	if got, want := resp.Header.Get("Content-Disposition"), `inline; filename="ops-guide-3.pdf"`; got != want {
		t.Errorf("the presigned URL's Content-Disposition %q, want %q (the object was stored as an attachment)", got, want)
	}
	if n := e.commands(t); n != 0 {
		t.Errorf("%d Redis commands, want 0", n)
	}
}

// TestCreate_StoredArtifactAnsweredWithoutATask: a POST whose artifact is
// stored answers 200 with the result, queues nothing and costs at most 10
// Redis commands; its id reads, downloads and refuses a cancel like any
// completed export's.
func TestCreate_StoredArtifactAnsweredWithoutATask(t *testing.T) {
	e := newLinkEnv(t, linkOpts{token: "s3cret", publicURL: "https://pdf.example.com/"})
	pdf := []byte("%PDF-1.7\n" + strings.Repeat("y", 1000) + "\n%%EOF\n")
	payload := `{"v":1,"manual_id":"ops-guide","version":"5","source":{"url":"https://docs.example.com/ops-guide/5/print"},"options":{"paper":"A4"}}`
	p, err := spec.DecodeRequest([]byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	e.storePDF(t, p, pdf)
	e.commands(t)
	code, body := do(t, "POST", e.srv.URL+"/v1/exports", "s3cret", payload)
	n := e.commands(t)
	if code != http.StatusOK || body["state"] != "completed" {
		t.Fatalf("POST of a stored artifact: %d %v; want 200 completed", code, body)
	}
	res, _ := body["result"].(map[string]any)
	if res["pages"] != float64(3) || res["bytes"] != float64(len(pdf)) || res["rendered"] != false {
		t.Errorf("result: %v", res)
	}
	if n > 10 {
		t.Errorf("POST cache hit cost %d Redis commands, want at most 10", n)
	}
	t.Logf("POST cache hit: %d Redis commands", n)
	if q := e.tasks(t); q != 0 {
		t.Errorf("%d tasks queued", q)
	}
	id := body["task_id"].(string)
	if want := "https://pdf.example.com/v1/exports/" + id + "/pdf"; res["download_url"] != want {
		t.Errorf("download_url %v, want %s", res["download_url"], want)
	}
	code, st := do(t, "GET", e.srv.URL+"/v1/exports/"+id+"?wait=5s", "s3cret", "")
	if code != http.StatusOK || st["state"] != "completed" {
		t.Errorf("status: %d %v", code, st)
	}
	if got, _ := st["result"].(map[string]any); got["download_url"] != res["download_url"] {
		t.Errorf("the status's result has download_url %v, the POST's %v", got["download_url"], res["download_url"])
	}
	req, _ := http.NewRequest("GET", e.srv.URL+"/v1/exports/"+id+"/pdf", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, pdf) {
		t.Errorf("download: %d, %d bytes", resp.StatusCode, len(got))
	}
	if code, _ := do(t, "DELETE", e.srv.URL+"/v1/exports/"+id, "s3cret", ""); code != http.StatusConflict {
		t.Errorf("cancel: %d, want 409", code)
	}
	// Not answered from storage: force, a callback-less request whose key
	// is not stored, per-export credentials.
	for _, tc := range []string{
		`{"v":1,"manual_id":"ops-guide","version":"5","source":{"url":"https://docs.example.com/ops-guide/5/print"},"options":{"paper":"A4"},"force":true}`,
		`{"v":1,"manual_id":"ops-guide","version":"6","source":{"url":"https://docs.example.com/ops-guide/6/print"}}`,
		`{"v":1,"manual_id":"ops-guide","version":"5","source":{"url":"https://docs.example.com/ops-guide/5/print","headers":{"Authorization":"Bearer x"}},"options":{"paper":"A4"}}`,
	} {
		if code, body := do(t, "POST", e.srv.URL+"/v1/exports", "s3cret", tc); code != http.StatusAccepted {
			t.Errorf("POST %s: %d %v, want 202", tc, code, body)
		}
	}
}
