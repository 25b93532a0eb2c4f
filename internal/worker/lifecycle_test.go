package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/api"
	"github.com/pdfexport/pdfexport/internal/api/apitest"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage/sidestore"
	"github.com/pdfexport/pdfexport/internal/tasks"
	"github.com/pdfexport/pdfexport/internal/tasks/outcome"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// tokenSite is a docs site on 127.0.0.1 that records the Authorization
// header of every request; /slow never finishes loading by itself.
type tokenSite struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newTokenSite(t *testing.T) *tokenSite {
	t.Helper()
	s := &tokenSite{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.URL.Path+" "+r.Header.Get("Authorization"))
		s.mu.Unlock()
		fmt.Fprintf(w, "<!doctype html><title>%s</title><h1>%s</h1>", r.URL.Path, r.URL.Path)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *tokenSite) sawToken(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.seen {
		if strings.Contains(l, token) {
			return true
		}
	}
	return false
}

func (s *tokenSite) host() string { return strings.TrimPrefix(s.URL, "http://") }

// largeDoc is an inline document the client stores beside its task.
func largeDoc(title string) string {
	return "<!doctype html><h1>" + title + "</h1><p>" + strings.Repeat("a long manual page. ", 64<<10/20) + "</p>"
}

// awaitState polls a task until asynq shows it in state.
func awaitState(t *testing.T, insp *asynq.Inspector, queue, id string, state asynq.TaskState) *asynq.TaskInfo {
	t.Helper()
	var info *asynq.TaskInfo
	testsupport.Eventually(t, 60*time.Second, func() error {
		var err error
		info, err = insp.GetTaskInfo(queue, id)
		return testsupport.Unless(err == nil && info.State == state, "task %s not %s (last %+v, %v)", id, state, info, err)
	})
	return info
}

// TestWorker_ForgedReferencesAreRefusedAndTheOwnerCompletes: a hostile
// caller names another export's credentials and stored document. The HTTP
// API answers 400 naming the field, the Go client a FieldError; an envelope
// with those references written straight to the queue (what the previous
// release let a caller do) fails for good without the owner's token going
// anywhere, and takes nothing from the owner, whose exports complete.
func TestWorker_ForgedReferencesAreRefusedAndTheOwnerCompletes(t *testing.T) {
	t.Parallel()
	site := newTokenSite(t)
	redis := testsupport.StartRedis(t)
	cfg := loadConfig(t, "REDIS_URL="+redis.URL(), "STORAGE_URL=file://"+t.TempDir(), "ADMIN_ADDR=",
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "ALLOWED_HOSTS="+site.host(), "QUEUES=default=1,owners=1")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	insp := asynq.NewInspectorFromRedisClient(redis.Client())
	// The owner's exports wait on a paused queue while the forger acts.
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, AllowedHosts: site.host(),
		Queues: []string{"default", "owners"}})
	const victimToken = "Bearer victim-secret-5d1e"
	withCreds, err := c.Enqueue(ctx, exportclient.Request{ManualID: "private", Version: "1", URL: site.URL + "/private",
		Headers: map[string]string{"Authorization": victimToken}}, exportclient.Queue("owners"))
	if err != nil {
		t.Fatal(err)
	}
	withDoc, err := c.Enqueue(ctx, exportclient.Request{ManualID: "big", Version: "1", HTML: largeDoc("the owner's manual")}, exportclient.Queue("owners"))
	if err != nil {
		t.Fatal(err)
	}
	if err := insp.PauseQueue("owners"); err != nil {
		t.Fatal(err)
	}
	startWorker(t, cfg, Options{})
	victim := func(id string) spec.Envelope {
		info, err := insp.GetTaskInfo("owners", id)
		if err != nil {
			t.Fatal(err)
		}
		e, err := spec.DecodeEnvelope(info.Payload)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	credRef, docRef := victim(withCreds.TaskID).Source.Credentials, victim(withDoc.TaskID).Source.HTMLRef
	if credRef == nil || docRef == nil {
		t.Fatal("the owner's envelopes name no references; the test proves nothing")
	}
	refJSON, _ := json.Marshal(credRef)
	docJSON, _ := json.Marshal(docRef)
	forgedCreds := `{"v":1,"manual_id":"stolen","version":"1","source":{"url":"` + site.URL + `/thief","credentials_ref":` + string(refJSON) + `}}`
	forgedDoc := `{"v":1,"manual_id":"stolen","version":"2","source":{"html_ref":` + string(docJSON) + `}}`

	// Through the HTTP API and the Go client: refused, naming the field.
	srv := httptest.NewServer(apitest.Contract(t, api.New(api.Config{Client: c, Logger: slog.New(slog.DiscardHandler)})))
	t.Cleanup(srv.Close)
	for body, field := range map[string]string{forgedCreds: "source.credentials_ref", forgedDoc: "source.html_ref"} {
		resp, err := http.Post(srv.URL+"/v1/exports", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Error, Field string }
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || e.Field != field {
			t.Errorf("POST naming %s: %d %+v, want 400 naming it", field, resp.StatusCode, e)
		}
		_, err = exportclient.DecodePayload([]byte(body))
		var fe *exportclient.FieldError
		if !errors.As(err, &fe) || fe.Field != field || !errors.Is(err, exportclient.ErrInvalid) {
			t.Errorf("DecodePayload naming %s: %v", field, err)
		}
	}

	// Straight onto the queue: the worker refuses both for good.
	raw := asynq.NewClientFromRedisClient(redis.Client())
	for body, field := range map[string]string{forgedCreds: "source.credentials_ref", forgedDoc: "source.html_ref"} {
		info, err := raw.EnqueueContext(ctx, tasks.NewExportTask([]byte(body)), asynq.MaxRetry(3), asynq.Retention(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		got := awaitState(t, insp, "default", info.ID, asynq.TaskStateArchived)
		if got.Retried != 0 || !strings.Contains(got.LastErr, field) || !strings.Contains(got.LastErr, "not stored for this export") {
			t.Errorf("forged %s: archived after %d retries with %q", field, got.Retried, got.LastErr)
		}
	}
	if site.sawToken("victim-secret") {
		t.Fatal("the owner's token reached the site for the forger")
	}

	// The owner's data is all there, and its exports complete.
	if n := redis.Client().Exists(ctx, "pdfexport:credentials:{"+credRef.ID+"}", "pdfexport:html:{"+docRef.SHA256+"}").Val(); n != 2 {
		t.Fatalf("%d of the owner's 2 stored items left after the forgeries", n)
	}
	if err := insp.UnpauseQueue("owners"); err != nil {
		t.Fatal(err)
	}
	for _, job := range []exportclient.Enqueued{withCreds, withDoc} {
		st, err := c.Wait(ctx, job.TaskID, 0)
		if err != nil || st.State != exportclient.StateCompleted {
			t.Fatalf("the owner's export %s: %+v, %v", job.TaskID, st, err)
		}
	}
	if !site.sawToken("/private " + victimToken) {
		t.Error("the owner's render did not get its own token")
	}
	if left := redis.Client().Keys(ctx, "pdfexport:credentials:{*}").Val(); len(left) != 0 {
		t.Errorf("credentials left after the owner's exports were final: %v", left)
	}
	if left := redis.Client().Keys(ctx, "pdfexport:html:{*}").Val(); len(left) != 0 {
		t.Errorf("documents left after the owner's exports were final: %v", left)
	}
}

// TestWorker_CancelOnTheLastAttemptLeavesNothingBeside: with no retries
// (MAX_RETRY=0), canceling a running export with credentials and a running
// export of a 64 KiB document leaves no credentials and takes only the
// canceled export's share of the document: another export of the same
// document still completes, and the document goes with it. A dashboard
// "Run" of the canceled export afterwards does nothing (no second release).
func TestWorker_CancelOnTheLastAttemptLeavesNothingBeside(t *testing.T) {
	t.Parallel()
	site := newTokenSite(t)
	redis := testsupport.StartRedis(t)
	cfg := loadConfig(t, "REDIS_URL="+redis.URL(), "STORAGE_URL=file://"+t.TempDir(), "ADMIN_ADDR=",
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "ALLOWED_HOSTS="+site.host(), "QUEUES=default=1,later=1",
		"RENDER_TIMEOUT=60s")
	startWorker(t, cfg, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	insp := asynq.NewInspectorFromRedisClient(redis.Client())
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, AllowedHosts: site.host(),
		Queues: []string{"default", "later"}, MaxRetry: -1})
	never := exportclient.Options{WaitFor: "window.__never === true"} // runs until canceled
	doc := largeDoc("shared")
	docKey := "pdfexport:html:{" + sidestore.DocumentRef(doc).SHA256 + "}"
	if err := insp.PauseQueue("later"); err != nil {
		t.Fatal(err)
	}
	sharer, err := c.Enqueue(ctx, exportclient.Request{ManualID: "shared", Version: "1", HTML: doc}, exportclient.Queue("later"))
	if err != nil {
		t.Fatal(err)
	}
	withCreds, err := c.Enqueue(ctx, exportclient.Request{ManualID: "private", Version: "1", URL: site.URL + "/private",
		Headers: map[string]string{"Authorization": "Bearer canceled-secret"}, Options: never})
	if err != nil {
		t.Fatal(err)
	}
	withDoc, err := c.Enqueue(ctx, exportclient.Request{ManualID: "shared", Version: "1", HTML: doc, Options: never})
	if err != nil {
		t.Fatal(err)
	}
	for _, job := range []exportclient.Enqueued{withCreds, withDoc} {
		awaitState(t, insp, "default", job.TaskID, asynq.TaskStateActive)
	}
	time.Sleep(300 * time.Millisecond) // both are rendering, credentials and document read
	for _, job := range []exportclient.Enqueued{withCreds, withDoc} {
		st, err := c.Cancel(ctx, job.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		if st.State != exportclient.StateCanceled {
			st, err = c.Wait(ctx, job.TaskID, 0)
		}
		if err != nil || st.State != exportclient.StateCanceled {
			t.Fatalf("cancel of %s: %+v, %v", job.TaskID, st, err)
		}
		awaitState(t, insp, "default", job.TaskID, asynq.TaskStateArchived)
	}
	if left := redis.Client().Keys(ctx, "pdfexport:credentials:{*}").Val(); len(left) != 0 {
		t.Errorf("credentials left after the cancel on the last attempt: %v", left)
	}
	owners := redis.Client().HGet(ctx, docKey, "owners").Val()
	if owners != "1" {
		t.Errorf("document owners after the cancel: %q, want 1 (the export still waiting)", owners)
	}

	// A dashboard "Run" of the canceled export: it ends at once, final
	// already, and gives nothing back a second time.
	if err := insp.RunTask("default", withDoc.TaskID); err != nil {
		t.Fatal(err)
	}
	rerun := awaitState(t, insp, "default", withDoc.TaskID, asynq.TaskStateArchived)
	if !strings.Contains(rerun.LastErr, "canceled already") {
		t.Errorf("the rerun's error %q, want it to say the export is canceled already", rerun.LastErr)
	}
	if got := redis.Client().HGet(ctx, docKey, "owners").Val(); got != "1" {
		t.Errorf("document owners after the rerun: %q, want 1", got)
	}
	if st, _ := c.Status(ctx, withDoc.TaskID); st.State != exportclient.StateCanceled {
		t.Errorf("status after the rerun: %s", st.State)
	}

	if err := insp.UnpauseQueue("later"); err != nil {
		t.Fatal(err)
	}
	if st, err := c.Wait(ctx, sharer.TaskID, 0); err != nil || st.State != exportclient.StateCompleted {
		t.Fatalf("the other export of the document: %+v, %v", st, err)
	}
	if n := redis.Client().Exists(ctx, docKey).Val(); n != 0 {
		t.Error("the document outlived its last export")
	}
}

// TestWorker_FinishesWhatTheDashboardArchives: an export archived from the
// dashboard before any worker ran it is finished by the worker's sweep: its
// final state is recorded (failed), what it stored goes, its callback is
// enqueued.
func TestWorker_FinishesWhatTheDashboardArchives(t *testing.T) {
	t.Parallel()
	site := newTokenSite(t)
	redis := testsupport.StartRedis(t)
	cfg := loadConfig(t, "REDIS_URL="+redis.URL(), "STORAGE_URL=file://"+t.TempDir(), "ADMIN_ADDR=",
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "ALLOWED_HOSTS="+site.host(), "QUEUES=default=1,parked=1",
		"CALLBACK_ALLOWED_HOSTS="+site.host(), "CALLBACK_SECRET="+callbackSecret)
	startWorker(t, cfg, Options{FinishSweepInterval: 100 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	insp := asynq.NewInspectorFromRedisClient(redis.Client())
	if err := insp.PauseQueue("parked"); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, AllowedHosts: site.host(),
		CallbackAllowedHosts: site.host(), Queues: []string{"default", "parked"}})
	job, err := c.Enqueue(ctx, exportclient.Request{ManualID: "m", Version: "1", URL: site.URL + "/p",
		Headers: map[string]string{"Authorization": "Bearer archived"}, CallbackURL: site.URL + "/hook"}, exportclient.Queue("parked"))
	if err != nil {
		t.Fatal(err)
	}
	if err := insp.ArchiveTask("parked", job.TaskID); err != nil { // what asynqmon's "Archive" does
		t.Fatal(err)
	}
	var f spec.Final
	testsupport.Eventually(t, 10*time.Second, func() error {
		var ok bool
		var err error
		f, ok, err = outcome.Recorded(ctx, redis.Client(), job.TaskID)
		return testsupport.Unless(ok, "the archived export was not finished by the sweep (%v)", err)
	})
	if f.State != spec.StateFailed || !strings.Contains(f.Error, "dashboard") {
		t.Errorf("recorded %+v", f)
	}
	if left := redis.Client().Keys(ctx, "pdfexport:credentials:{*}").Val(); len(left) != 0 {
		t.Errorf("credentials left after the sweep: %v", left)
	}
	if _, err := insp.GetTaskInfo("parked", outcome.CallbackTaskID(job.TaskID)); err != nil {
		t.Errorf("no callback for the archived export: %v", err)
	}
	if st, err := c.Status(ctx, job.TaskID); err != nil || st.State != exportclient.StateFailed {
		t.Errorf("status %+v, %v", st, err)
	}
}
