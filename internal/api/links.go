package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/api/apiauth"
	"github.com/pdfexport/pdfexport/internal/delivery/manuals"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
)

// DefaultLinkWait is LINK_WAIT's default: how long a link of a version
// that is not stored waits for its render before it answers 202.
const DefaultLinkWait = 30 * time.Second

// linkRetryAfter is the Retry-After of a link whose render still runs.
const linkRetryAfter = 5 * time.Second

// linkWindow is how long the clicks on a link that is not stored share one
// task id: a thousand readers of a new version make one task (asynq refuses
// the others' duplicates), and a render that failed is tried again by the
// clicks of the next window, not held for the failed task's 90 days.
// Clicks of two windows make two tasks and still one render: the second
// waits at the render gate and reuses the first one's PDF.
const linkWindow = 5 * time.Minute

// linkTaskID is the task of the clicks on the artifact key within one
// linkWindow.
func linkTaskID(key string, now time.Time) string {
	sum := sha256.Sum256([]byte(key + "\x00" + strconv.FormatInt(now.Unix()/int64(linkWindow/time.Second), 10)))
	return "link-" + hex.EncodeToString(sum[:16])
}

// link answers GET /v1/manuals/{manual_id}/{version}.pdf, a reader's
// download link. Who may follow it is settled before any work: a link of a
// manual with links: public, one signed with LINK_SECRET and not expired,
// or a request with an API token; anything else is a 403 that neither
// reads storage nor enqueues. A stored PDF is answered from storage alone
// (no Redis command); one that is not is enqueued once per linkWindow and
// waited for up to LINK_WAIT.
func (a *api) link(w http.ResponseWriter, r *http.Request) {
	manualID := r.PathValue("manual_id")
	version, ok := strings.CutSuffix(r.PathValue("file"), ".pdf")
	if !ok {
		writeJSON(w, http.StatusNotFound, apiError{Error: "a manual's link is /v1/manuals/{manual_id}/{version}.pdf"})
		return
	}
	m, ok := a.manuals.Current().Get(manualID)
	if !ok {
		writeJSON(w, http.StatusNotFound, apiError{Error: fmt.Sprintf("no manual %q in MANUALS_FILE", manualID), Field: "manual_id"})
		return
	}
	query := r.URL.Query()
	ck := linkCacheKey{m: m, version: version, query: linkQuery(query)}
	cached, known := a.linkReqs.get(ck)
	req := cached.req
	if !known {
		sr, err := m.Request(version, query)
		if errors.Is(err, manuals.ErrUnknownVersion) {
			writeJSON(w, http.StatusNotFound, apiError{Error: err.Error(), Field: "version"})
			return
		} else if err != nil {
			writeJSON(w, http.StatusBadRequest, apiError{Error: err.Error(), Field: badParameter(err)})
			return
		}
		if req, err = publicPayload(sr); err != nil {
			writeJSON(w, http.StatusInternalServerError, apiError{Error: err.Error()})
			return
		}
	}
	c, err := a.linkOpener(r, m, query)
	if err != nil {
		a.log.InfoContext(r.Context(), "link refused", "manual_id", manualID, "version", version, "why", err)
		writeJSON(w, http.StatusForbidden, apiError{Error: "this link is not signed, or its signature is wrong or expired: " + strings.TrimPrefix(err.Error(), spec.ErrLinkRefused.Error()+": ")})
		return
	}
	queue := m.Queue
	if queue == "" {
		queue = a.client.Queue()
	}
	if c != nil && !c.MayEnqueue(queue) {
		writeJSON(w, http.StatusForbidden, apiError{Field: "queue", Error: fmt.Sprintf("client %s may not enqueue to manual %s's queue %q", c.Name, manualID, queue)})
		return
	}
	key := cached.key
	if !known {
		if err := a.client.Validate(req); err != nil {
			writeJSON(w, http.StatusBadRequest, apiError{Error: err.Error(), Field: firstField(err)})
			return
		}
		key = req.ArtifactKey()
		a.linkReqs.put(ck, linkReq{req: req, key: key})
	}
	if a.serveLink(w, r, m, version, key, false) {
		return
	}
	a.renderLink(w, r, m, version, req, key, queue)
}

// badParameter is the query parameter an error of Manual.Request names.
func badParameter(err error) string {
	var pe *manuals.ParameterError
	if errors.As(err, &pe) {
		return pe.Name
	}
	return ""
}

// linkOpener says who follows the link: nil for anyone (a public manual, a
// valid signature), the client of an API token; an error wrapping
// spec.ErrLinkRefused when nobody may.
func (a *api) linkOpener(r *http.Request, m *manuals.Manual, query url.Values) (*apiauth.Client, error) {
	if got, bearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); bearer && got != "" {
		if c, ok := a.auth.Authenticate(got); ok && c.Name != apiauth.Anonymous {
			return &c, nil
		}
		return nil, fmt.Errorf("%w: wrong API token", spec.ErrLinkRefused)
	}
	if m.Public() {
		return nil, nil
	}
	if len(a.linkKeys) == 0 {
		return nil, fmt.Errorf("%w: LINK_SECRET is not set, so only public manuals and API tokens open links", spec.ErrLinkRefused)
	}
	return nil, spec.VerifyLink(a.linkKeys, r.Method, r.URL.Path, query, time.Now())
}

// serveLink answers the link from storage if key is stored, and reports
// whether it did (an error answer included). afterRender: the export
// completed, so a missing PDF is an error, not a reason to render.
func (a *api) serveLink(w http.ResponseWriter, r *http.Request, m *manuals.Manual, version, key string, afterRender bool) bool {
	if a.store == nil {
		writeJSON(w, http.StatusNotImplemented, apiError{Error: "this API has no artifact storage configured (STORAGE_URL)"})
		return true
	}
	obj, err := a.store.Stat(r.Context(), key)
	switch {
	case errors.Is(err, storage.ErrNotFound) && !afterRender:
		return false
	case errors.Is(err, storage.ErrNotFound):
		a.log.ErrorContext(r.Context(), "link: the export completed but its PDF is not in storage", "manual_id", m.ID, "version", version, "key", key)
		w.Header().Set("Retry-After", strconv.Itoa(int(linkWindow/time.Second)))
		writeJSON(w, http.StatusServiceUnavailable, apiError{Error: "the PDF was rendered but is not in storage (deleted meanwhile?); retry later"})
		return true
	case err != nil:
		a.log.ErrorContext(r.Context(), "link: storage", "manual_id", m.ID, "version", version, "err", err)
		writeJSON(w, http.StatusServiceUnavailable, apiError{Error: "storage unavailable, retry later"})
		return true
	}
	cache := "private, max-age=0, must-revalidate"
	if m.Public() {
		cache = "public, max-age=0, must-revalidate" // a CDN may keep it and revalidate by ETag
	}
	a.serveObject(w, r, key, obj, servedAs{disposition: "inline", fileName: m.ID + "-" + version + ".pdf", cacheControl: cache, redirect: true})
	return true
}

// renderLink enqueues the export of a link that is not stored, through the
// render gate like every export, waits for it up to LINK_WAIT and answers
// as serveLink, or 202 while it is still on its way.
func (a *api) renderLink(w http.ResponseWriter, r *http.Request, m *manuals.Manual, version string, req exportclient.Payload, key, queue string) {
	req.RequestID = "link"
	id := linkTaskID(key, time.Now())
	job, err := a.client.EnqueuePayload(r.Context(), req, exportclient.Queue(queue), exportclient.TaskID(id))
	switch {
	case errors.Is(err, exportclient.ErrTaskExists):
		// Another click of this window queued it: wait for that one.
	case err != nil:
		a.log.ErrorContext(r.Context(), "link: enqueue failed", "manual_id", m.ID, "version", version, "err", err)
		writeJSON(w, http.StatusServiceUnavailable, apiError{Error: "queue unavailable, retry later"})
		return
	default:
		a.log.InfoContext(r.Context(), "link: export enqueued", "manual_id", m.ID, "version", version, "task_id", job.TaskID, "key", key)
	}
	status := "/v1/exports/" + id
	st := exportclient.Status{TaskID: id, State: exportclient.StatePending}
	select {
	case a.waiters <- struct{}{}:
		ctx, cancel := context.WithTimeout(r.Context(), a.linkWait)
		got, werr := a.client.Wait(ctx, id, time.Second)
		cancel()
		<-a.waiters
		if r.Context().Err() != nil {
			return // the reader went away
		}
		if werr == nil || got.TaskID != "" {
			st = got
		}
	default:
		// As many waiting as the long-polls may: answer at once.
	}
	switch st.State {
	case exportclient.StateCompleted:
		a.serveLink(w, r, m, version, key, true)
	case exportclient.StateFailed, exportclient.StateCanceled:
		w.Header().Set("Retry-After", strconv.Itoa(int(linkWindow/time.Second)))
		writeJSON(w, http.StatusBadGateway, linkPending{State: st.State, TaskID: id, StatusURL: status,
			Error: fmt.Sprintf("the export of %s %s is %s: %s", m.ID, version, st.State, st.Error)})
	default:
		w.Header().Set("Retry-After", strconv.Itoa(int(linkRetryAfter/time.Second)))
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusAccepted, linkPending{State: st.State, TaskID: id, StatusURL: status,
			Error: fmt.Sprintf("the PDF of %s %s is being made; retry after %s", m.ID, version, linkRetryAfter)})
	}
}

// maxLinkReqs bounds the requests links remember; past it, they start
// afresh.
const maxLinkReqs = 4096

// linkReqs remembers the requests and artifact keys of the links followed,
// so that a click on a stored PDF costs a stat(2) and the bytes, not the
// request's validation and key derivation each time. An entry is a
// manual's entry (a reload makes new ones), a version and the query's
// parameters other than the signature's; it is only made for a request
// that passed Validate.
type linkReqs struct {
	mu sync.Mutex
	m  map[linkCacheKey]linkReq
}

type linkCacheKey struct {
	m              *manuals.Manual
	version, query string
}

type linkReq struct {
	req exportclient.Payload
	key string
}

func (c *linkReqs) get(k linkCacheKey) (linkReq, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *linkReqs) put(k linkCacheKey, v linkReq) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxLinkReqs {
		c.m = make(map[linkCacheKey]linkReq)
	}
	c.m[k] = v
}

// linkQuery is the query without the signature's parameters, encoded.
func linkQuery(q url.Values) string {
	if len(q) == 0 {
		return ""
	}
	rest := make(url.Values, len(q))
	for k, v := range q {
		if k != spec.LinkExpires && k != spec.LinkSignature {
			rest[k] = v
		}
	}
	return rest.Encode()
}

// linkPending is the JSON answer of a link whose PDF is not there.
type linkPending struct {
	State     exportclient.State `json:"state"`
	TaskID    string             `json:"task_id"`
	StatusURL string             `json:"status_url"`
	Error     string             `json:"error"`
}

// publicPayload is a manual's request as exportclient's Payload: through
// its JSON, the contract both types share (exportclient's types_test.go
// keeps them equal), once per link the cache does not hold.
func publicPayload(r spec.Request) (exportclient.Payload, error) {
	b, err := r.Encode()
	if err != nil {
		return exportclient.Payload{}, fmt.Errorf("encoding the manual's request: %w", err)
	}
	var p exportclient.Payload
	if err := json.Unmarshal(b, &p); err != nil {
		return exportclient.Payload{}, fmt.Errorf("decoding the manual's request: %w", err)
	}
	return p, nil
}
