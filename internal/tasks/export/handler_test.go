package export_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/lock"
	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
	"github.com/pdfexport/pdfexport/internal/storage/sidestore"
	"github.com/pdfexport/pdfexport/internal/tasks"
	"github.com/pdfexport/pdfexport/internal/tasks/export"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

const manualHTML = `<!doctype html><html><head><style>
@page { size: A4; margin: 15mm } h1 { break-before: page } </style></head><body>
<h1>Chapter 1</h1><p>Alpha</p><h1>Chapter 2</h1><p>Beta</p><h1>Chapter 3</h1><p>Gamma</p>
<script>window.__PDF_READY__ = true</script></body></html>`

// env is one queue Redis, one lock Redis, one artifact folder and one
// Chromium, shared by `workers` asynq servers in this process.
type env struct {
	queue, locks *testsupport.Redis
	dir          string
	client       *exportclient.Client
}

func startEnv(t *testing.T, workers int) *env { return startEnvWith(t, workers, nil) }

// startEnvWith is startEnv with the file store wrapped by wrap (fault
// injection), when not nil.
func startEnvWith(t *testing.T, workers int, wrap func(storage.Backend) storage.Backend) *env {
	t.Helper()
	return startEnvSide(t, workers, wrap, nil)
}

// startEnvSide is startEnvWith whose workers read what tasks store beside
// themselves through side, made on the queue Redis, when not nil.
func startEnvSide(t *testing.T, workers int, wrap func(storage.Backend) storage.Backend, side func(redis.UniversalClient) export.SideStore) *env {
	t.Helper()
	e := &env{queue: testsupport.StartRedis(t), locks: testsupport.StartRedis(t), dir: t.TempDir()}
	var sideStore export.SideStore
	if side != nil {
		rdb := e.queue.Client()
		t.Cleanup(func() { _ = rdb.Close() })
		sideStore = side(rdb)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	files, err := storage.NewFile(e.dir, "")
	if err != nil {
		t.Fatal(err)
	}
	var store storage.Backend = files
	if wrap != nil {
		store = wrap(files)
	}
	renderer, err := render.New(render.Config{ChromiumPath: testsupport.ChromiumPath(t), Concurrency: 2, Timeout: 30 * time.Second, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = renderer.Close() })
	lockRedis := redis.NewClient(&redis.Options{Addr: e.locks.Addr(), DialTimeout: 300 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = lockRedis.Close() })
	for i := range workers {
		gate := lock.NewGate(lock.NewMutex(lockRedis, lock.Config{TTL: 5 * time.Second, FailOpen: true, OpTimeout: time.Second, Logger: log}))
		h, err := export.NewHandler(export.Config{Store: store, Renderer: renderer, Gate: gate, Logger: log, Namespace: e.dir,
			Hostname: "worker-" + strconv.Itoa(i), SideStore: sideStore})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Close() })
		srv := asynq.NewServer(asynq.RedisClientOpt{Addr: e.queue.Addr()}, asynq.Config{
			Concurrency: 4, TaskCheckInterval: 20 * time.Millisecond, Logger: testsupport.QuietAsynq{}, LogLevel: asynq.FatalLevel,
			RetryDelayFunc: func(int, error, *asynq.Task) time.Duration { return 100 * time.Millisecond },
		})
		mux := asynq.NewServeMux()
		mux.Handle(tasks.TypeExport, h)
		if err := srv.Start(mux); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Shutdown)
	}
	e.client, err = exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: e.queue.Addr()}, MaxRetry: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.client.Close() })
	return e
}

func (e *env) export(t *testing.T, p spec.Request) exportclient.Status {
	t.Helper()
	job, err := e.client.EnqueuePayload(context.Background(), payload(t, p))
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	st, err := e.client.Wait(ctx, job.TaskID, 20*time.Millisecond)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	return st
}

func manualPayload() spec.Request {
	return spec.Request{V: 1, ManualID: "acme", Version: "1.0", Source: spec.RequestSource{HTML: manualHTML},
		Options: spec.Options{WaitFor: "window.__PDF_READY__===true"}}
}

// exportAll exports n duplicates of p at once and returns their statuses.
func (e *env) exportAll(t *testing.T, p spec.Request, n int) []exportclient.Status {
	t.Helper()
	statuses := make([]exportclient.Status, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = e.export(t, p)
		}()
	}
	wg.Wait()
	return statuses
}

func TestExport_ConcurrentDuplicatesRenderOnce(t *testing.T) {
	e := startEnv(t, 2)
	statuses := e.exportAll(t, manualPayload(), 6)

	rendered := 0
	key := manualPayload().ArtifactKey()
	for _, st := range statuses {
		if st.State != exportclient.StateCompleted || st.Result == nil {
			t.Fatalf("export %s ended %s: %s", st.TaskID, st.State, st.Error)
		}
		r := st.Result
		if r.Rendered {
			rendered++
		} else if r.RenderMS != 0 {
			t.Errorf("reuser reports render_ms %d", r.RenderMS)
		}
		if !strings.HasSuffix(r.ArtifactKey, key) || r.Pages != 3 || r.Bytes <= 0 || r.FailOpen {
			t.Errorf("result %+v: want key %s, 3 pages, bytes, no fail-open", r, key)
		}
	}
	if rendered != 1 {
		t.Fatalf("%d tasks rendered, want exactly 1", rendered)
	}
	if got := testsupport.PDFPages(t, filepath.Join(e.dir, key)); got != 3 {
		t.Fatalf("stored PDF has %d pages, want 3", got)
	}

	// A later request reuses without rendering; a forced one renders again.
	later := e.export(t, manualPayload())
	if later.Result == nil || later.Result.Rendered || later.Result.Pages != 3 {
		t.Fatalf("later export = %+v, want reused with 3 pages", later.Result)
	}
	forced := manualPayload()
	forced.Force = true
	again := e.export(t, forced)
	if again.Result == nil || !again.Result.Rendered {
		t.Fatalf("forced export = %+v, want rendered", again.Result)
	}
}

// readCounter is the worker's side store, counting how often each kind is
// read and checked.
type readCounter struct {
	*sidestore.Store
	mu    sync.Mutex
	reads map[sidestore.Kind]int
	owns  map[sidestore.Kind]int
}

func (c *readCounter) Get(ctx context.Context, owner string, ref sidestore.Ref) (sidestore.Value, error) {
	c.mu.Lock()
	c.reads[ref.Kind()]++
	c.mu.Unlock()
	return c.Store.Get(ctx, owner, ref)
}

func (c *readCounter) Owns(ctx context.Context, owner string, ref sidestore.Ref) error {
	c.mu.Lock()
	c.owns[ref.Kind()]++
	c.mu.Unlock()
	return c.Store.Owns(ctx, owner, ref)
}

func (c *readCounter) counts() (reads, owns int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads[sidestore.HTML], c.owns[sidestore.HTML]
}

// TestExport_OnlyTheRenderReadsTheDocument: of duplicate exports of a
// document sent beside their tasks, each checks that it owns the document,
// and only the one that renders reads it: the others wait for that render
// and reuse its PDF, as a later export of the stored PDF does.
func TestExport_OnlyTheRenderReadsTheDocument(t *testing.T) {
	side := &readCounter{reads: map[sidestore.Kind]int{}, owns: map[sidestore.Kind]int{}}
	e := startEnvSide(t, 2, nil, func(rdb redis.UniversalClient) export.SideStore {
		side.Store = &sidestore.Store{RDB: rdb}
		return side
	})
	big := manualPayload()
	big.Source.HTML = strings.Replace(manualHTML, "<body>", "<body><!--"+strings.Repeat("padding ", sidestore.HTMLThreshold/8)+"-->", 1)
	const duplicates = 4
	rendered := 0
	for _, st := range e.exportAll(t, big, duplicates) {
		if st.State != exportclient.StateCompleted || st.Result == nil || st.Result.Pages != 3 {
			t.Fatalf("export %s ended %s (%+v): %s", st.TaskID, st.State, st.Result, st.Error)
		}
		if st.Result.Rendered {
			rendered++
		}
	}
	reads, owns := side.counts()
	if rendered != 1 || reads != 1 || owns != duplicates {
		t.Fatalf("%d renders, the document read %d times and its ownership checked %d times; want 1, 1 and %d", rendered, reads, owns, duplicates)
	}
	later := e.export(t, big)
	if later.Result == nil || later.Result.Rendered {
		t.Fatalf("later export = %+v, want the stored PDF", later.Result)
	}
	if r, o := side.counts(); r != 1 || o != duplicates+1 {
		t.Errorf("after a cache hit: the document read %d times, checked %d; want 1 and %d", r, o, duplicates+1)
	}
}

func TestExport_DifferentOptionsGetTheirOwnArtifact(t *testing.T) {
	e := startEnv(t, 1)
	a := e.export(t, manualPayload())
	p := manualPayload()
	p.Options.Landscape = true
	b := e.export(t, p)
	if a.Result == nil || b.Result == nil || !a.Result.Rendered || !b.Result.Rendered || a.Result.ArtifactKey == b.Result.ArtifactKey {
		t.Fatalf("results %+v and %+v: want two rendered artifacts under different keys", a.Result, b.Result)
	}
}

func TestExport_BadPayloadIsArchivedWithFieldName(t *testing.T) {
	e := startEnv(t, 1)
	insp := asynq.NewInspector(asynq.RedisClientOpt{Addr: e.queue.Addr()})
	t.Cleanup(func() { _ = insp.Close() })
	cl := asynq.NewClient(asynq.RedisClientOpt{Addr: e.queue.Addr()})
	t.Cleanup(func() { _ = cl.Close() })
	tests := []struct {
		name, payload, field string
	}{
		{"unknown field", `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"},"colour":"red"}`, "colour"},
		{"traversal", `{"v":1,"manual_id":"../../etc","version":"1","source":{"html":"x"}}`, "manual_id"},
		{"file url", `{"v":1,"manual_id":"a","version":"1","source":{"url":"file:///etc/passwd"}}`, "source.url"},
		{"not json", `not json`, "payload"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := cl.Enqueue(tasks.NewExportTask([]byte(tt.payload)), asynq.MaxRetry(5), asynq.Retention(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			var ti *asynq.TaskInfo
			testsupport.Eventually(t, 20*time.Second, func() error {
				var err error
				ti, err = insp.GetTaskInfo(info.Queue, info.ID)
				return testsupport.Unless(err == nil && ti.State == asynq.TaskStateArchived, "task not archived (last: %+v, %v)", ti, err)
			})
			if ti.Retried != 0 || !strings.Contains(ti.LastErr, tt.field) {
				t.Fatalf("archived after %d retries with %q; want no retry and an error naming %s", ti.Retried, ti.LastErr, tt.field)
			}
		})
	}
}

func TestExport_FailsOpenWhenLockRedisIsDown(t *testing.T) {
	e := startEnv(t, 1)
	e.locks.Stop()
	st := e.export(t, manualPayload())
	if st.Result == nil || !st.Result.Rendered || !st.Result.FailOpen {
		t.Fatalf("export with the lock Redis down = %+v (%s), want rendered with fail_open", st.Result, st.Error)
	}
	if got := testsupport.PDFPages(t, filepath.Join(e.dir, manualPayload().ArtifactKey())); got != 3 {
		t.Fatalf("stored PDF has %d pages", got)
	}
}

// TestExport_LostLeaseIsRetriedNotArchived: when another token takes the
// render lock mid-render, the holder abandons its render, stores nothing, and
// its task is retried (not archived) and completes once the lock is free.
func TestExport_LostLeaseIsRetriedNotArchived(t *testing.T) {
	e := startEnv(t, 1)
	p := manualPayload()
	p.Source.HTML = `<!doctype html><h1>Slow</h1><script>setTimeout(() => { window.__PDF_READY__ = true }, 1500)</script>`
	job, err := e.client.EnqueuePayload(context.Background(), payload(t, p))
	if err != nil {
		t.Fatal(err)
	}
	locks := redis.NewClient(&redis.Options{Addr: e.locks.Addr()})
	t.Cleanup(func() { _ = locks.Close() })
	ctx := context.Background()
	var lockKey string
	testsupport.Eventually(t, 20*time.Second, func() error {
		keys, err := locks.Keys(ctx, "pdfexport:*:lock").Result()
		if len(keys) != 1 {
			return fmt.Errorf("the render never took its lock (lock keys %v, %v)", keys, err)
		}
		lockKey = keys[0]
		return nil
	})
	// An intruder's token replaces the holder's, as after an expiry and a takeover.
	if err := locks.Set(ctx, lockKey, "intruder", 2*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	st, err := e.client.Wait(wctx, job.TaskID, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != exportclient.StateCompleted || st.Retried < 1 || st.Result == nil || !st.Result.Rendered {
		t.Fatalf("status %+v (result %+v): want completed after at least one retry, rendered by the retry", st, st.Result)
	}
	if got := testsupport.PDFPages(t, filepath.Join(e.dir, p.ArtifactKey())); got != 1 {
		t.Fatalf("stored PDF has %d pages", got)
	}
}

// TestExport_DeletedArtifactIsRenderedAgainAtOnce: an artifact deleted from
// storage while its done marker still says "stored" (an operator, a
// lifecycle rule) is rendered again by the next export, on its first
// attempt, and stored again.
func TestExport_DeletedArtifactIsRenderedAgainAtOnce(t *testing.T) {
	e := startEnv(t, 1)
	first := e.export(t, manualPayload())
	if first.State != exportclient.StateCompleted || !first.Result.Rendered {
		t.Fatalf("first export: %+v", first)
	}
	key := first.Result.ArtifactKey
	if err := os.Remove(filepath.Join(e.dir, filepath.FromSlash(key))); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	again := e.export(t, manualPayload())
	if again.State != exportclient.StateCompleted || again.Result == nil || !again.Result.Rendered || again.Retried != 0 {
		t.Fatalf("export after the delete: %+v (result %+v), want rendered on the first attempt", again, again.Result)
	}
	t.Logf("rendered again in %v", time.Since(start).Round(time.Millisecond))
	if n := testsupport.PDFPages(t, filepath.Join(e.dir, filepath.FromSlash(key))); n != 3 {
		t.Errorf("the artifact stored again has %d pages, want 3", n)
	}
}

// faultStore injects, once each, what a real store cannot be made to do on
// cue: another writer replacing the object just before our Replace, and an
// error after a Replace that did commit (a connection lost on the answer).
type faultStore struct {
	storage.Backend
	mu            sync.Mutex
	beforeReplace func(ctx context.Context, key string)
	afterReplace  error
	replaces      int
}

func (s *faultStore) Replace(ctx context.Context, key, etag string, r io.Reader, o storage.PutOptions) (storage.Object, error) {
	s.mu.Lock()
	before := s.beforeReplace
	s.beforeReplace = nil
	if strings.HasSuffix(key, ".pdf") { // not the info object next to it
		s.replaces++
	}
	s.mu.Unlock()
	if before != nil {
		before(ctx, key)
	}
	obj, err := s.Backend.Replace(ctx, key, etag, r, o)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && s.afterReplace != nil {
		err, s.afterReplace = s.afterReplace, nil
		return storage.Object{}, err
	}
	return obj, err
}

// TestExport_ForceThatLosesTheReplaceReusesTheNewerObject: while a forced
// export renders, someone else replaces the artifact; its If-Match fails.
// The export ends on its first attempt, reusing the newer object, instead
// of failing, retrying and replacing again.
func TestExport_ForceThatLosesTheReplaceReusesTheNewerObject(t *testing.T) {
	var fs *faultStore
	e := startEnvWith(t, 1, func(b storage.Backend) storage.Backend { fs = &faultStore{Backend: b}; return fs })
	first := e.export(t, manualPayload())
	if first.State != exportclient.StateCompleted {
		t.Fatalf("first export: %+v", first)
	}
	var newer storage.Object
	fs.beforeReplace = func(ctx context.Context, key string) {
		obj, err := fs.Backend.Stat(ctx, key)
		if err != nil {
			t.Error(err)
			return
		}
		if newer, err = fs.Backend.Replace(ctx, key, obj.ETag, strings.NewReader("%PDF-1.7 someone else's"), storage.PutOptions{}); err != nil {
			t.Error(err)
		}
	}
	p := manualPayload()
	p.Force = true
	forced := e.export(t, p)
	if forced.State != exportclient.StateCompleted || forced.Retried != 0 || forced.Result.Rendered || forced.Result.ETag != newer.ETag {
		t.Fatalf("forced export: %+v (result %+v); want completed on the first attempt, reusing etag %s", forced, forced.Result, newer.ETag)
	}
}

// TestExport_RetryOfACommittedReplaceReusesItsOwnRender: a forced export
// whose Replace committed but whose answer was lost is retried; the retry
// finds its own render stored and reuses it instead of rendering again.
func TestExport_RetryOfACommittedReplaceReusesItsOwnRender(t *testing.T) {
	var fs *faultStore
	e := startEnvWith(t, 1, func(b storage.Backend) storage.Backend { fs = &faultStore{Backend: b}; return fs })
	if st := e.export(t, manualPayload()); st.State != exportclient.StateCompleted {
		t.Fatalf("first export: %+v", st)
	}
	fs.afterReplace = errors.New("test: connection reset after the commit")
	p := manualPayload()
	p.Force = true
	forced := e.export(t, p)
	if forced.State != exportclient.StateCompleted || forced.Retried != 1 {
		t.Fatalf("forced export: %+v; want completed on its second attempt", forced)
	}
	if fs.replaces != 1 {
		t.Errorf("%d replaces of the PDF: the retry rendered and replaced again", fs.replaces)
	}
	if !forced.Result.Rendered {
		t.Errorf("result %+v: the task that rendered the artifact must say rendered:true", forced.Result)
	}
}

// payload is the worker's request as exportclient's Payload, through the
// JSON both share.
func payload(t testing.TB, r spec.Request) exportclient.Payload {
	t.Helper()
	b, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	p, err := exportclient.DecodePayload(b)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
