package worker

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/storage"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestWorker_ManualChaptersSpreadOverTheFleet: the chapters of one manual
// are printed by both workers of a fleet (the manual's task queues them
// as tasks of their own), each exactly once; status shows the progress
// while it runs; the result counts every chapter as this export's render.
func TestWorker_ManualChaptersSpreadOverTheFleet(t *testing.T) {
	t.Parallel()
	const chapters = 8
	var hits [chapters]atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var i int
		if _, err := fmt.Sscanf(r.URL.Path, "/chapter-%d.html", &i); err != nil || i < 0 || i >= chapters {
			http.NotFound(w, r)
			return
		}
		hits[i].Add(1)
		time.Sleep(400 * time.Millisecond) // a slow docs server: the fleet's help shows
		fmt.Fprintf(w, `<!doctype html><title>Chapter %d</title><h1 id="top">Chapter %d</h1><p><a href="chapter-%d.html#top">next</a></p>`, i, i, (i+1)%chapters)
	}))
	t.Cleanup(site.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, storeDir, c := startManualFleet(ctx, t, site)
	req := exportclient.Request{ManualID: "fleet", Version: "1", Options: exportclient.Options{Outline: true}}
	for i := range chapters {
		req.Chapters = append(req.Chapters, exportclient.Chapter{URL: fmt.Sprintf("%s/chapter-%d.html", site.URL, i), Revision: "r1"})
	}
	job, err := c.Enqueue(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var progressSeen bool
	var st exportclient.Status
	testsupport.Eventually(t, time.Minute, func() error {
		st, err = c.Status(ctx, job.TaskID)
		if err != nil {
			return err
		}
		if p := st.Progress; p != nil {
			if p.ChaptersTotal != chapters || p.ChaptersDone < 0 || p.ChaptersDone > chapters {
				t.Fatalf("progress %+v, want 0..%d of %d", *p, chapters, chapters)
			}
			progressSeen = progressSeen || p.ChaptersDone > 0
		}
		if !st.Final() {
			return fmt.Errorf("state %s, progress %+v", st.State, st.Progress)
		}
		return nil
	})
	if st.State != exportclient.StateCompleted {
		t.Fatalf("manual %s: %s", st.State, st.Error)
	}
	if !progressSeen {
		t.Error("no status showed a chapter done while the manual ran")
	}
	if got := *st.Result.Chapters; got != (exportclient.ChapterCounts{Total: chapters, Rendered: chapters}) {
		t.Errorf("chapters %+v, want all %d rendered by this export", got, chapters)
	}
	for i := range chapters {
		if n := hits[i].Load(); n != 1 {
			t.Errorf("chapter %d fetched %d times, want 1", i, n)
		}
	}
	files, err := storage.NewFile(storeDir, "")
	if err != nil {
		t.Fatal(err)
	}
	paths, _ := filepath.Glob(filepath.Join(storeDir, "_chapters", "*.pdf"))
	renderers := map[string]int{}
	for _, p := range paths {
		obj, err := files.Stat(ctx, "_chapters/"+filepath.Base(p))
		if err != nil {
			t.Fatal(err)
		}
		renderers[obj.Metadata["renderer"]]++
	}
	if len(paths) != chapters || renderers["w1"] == 0 || renderers["w2"] == 0 {
		t.Fatalf("%d chapters stored, by %v: want %d, by both workers", len(paths), renderers, chapters)
	}
}

// TestWorker_OneSlotCompletesManyManuals: a worker with one handler slot
// and one tab completes a 64-chapter manual, and 20 such manuals enqueued
// at once: a manual's task prints its chapters itself and never waits for
// a task that needs its slot; the chapter tasks it queued end at once
// behind it.
func TestWorker_OneSlotCompletesManyManuals(t *testing.T) {
	t.Parallel()
	redis := testsupport.StartRedis(t)
	cfg := loadConfig(t, "REDIS_URL="+redis.URL(), "STORAGE_URL=file://"+t.TempDir(), "ADMIN_ADDR=",
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "WORKER_CONCURRENCY=1", "RENDER_CONCURRENCY=1", "BATCH_QUEUES=")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	w := New(cfg, Options{Logger: slog.New(slog.DiscardHandler), Hostname: "one-slot"})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Shutdown)
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}})
	var chapters []exportclient.Chapter
	for i := range 64 {
		chapters = append(chapters, exportclient.Chapter{HTML: fmt.Sprintf("<h1>Chapter %d</h1><p>text</p>", i)})
	}
	var ids []string
	for i := range 20 {
		job, err := c.Enqueue(ctx, exportclient.Request{ManualID: "one-slot", Version: fmt.Sprint(i), Chapters: chapters})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, job.TaskID)
	}
	rendered := 0
	for _, id := range ids {
		st, err := c.Wait(ctx, id, 100*time.Millisecond)
		if err != nil || st.State != exportclient.StateCompleted {
			t.Fatalf("manual %s: %v %s %s", id, err, st.State, st.Error)
		}
		if st.Result.Pages != 64 {
			t.Errorf("manual %s: %d pages, want 64", id, st.Result.Pages)
		}
		rendered += st.Result.Chapters.Rendered
	}
	if rendered != 64 {
		t.Errorf("%d chapter renders over 20 manuals of the same 64 chapters, want 64", rendered)
	}
}

// TestWorker_CancelingAManualStopsItsChapters: a manual canceled while its
// chapters print, on its own worker and on another, stops them: the
// chapter tasks end within a few seconds instead of printing on, none of
// the queued ones starts, and nothing more is fetched.
func TestWorker_CancelingAManualStopsItsChapters(t *testing.T) {
	// Serial (no t.Parallel): it bounds the stop after the cancel in real time.
	const chapters = 8
	var started atomic.Int64
	var lastStart atomic.Int64 // unix nanos
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started.Add(1)
		lastStart.Store(time.Now().UnixNano())
		select { // a slow docs server: every chapter is still loading when the cancel comes
		case <-time.After(6 * time.Second):
		case <-r.Context().Done():
			return
		}
		fmt.Fprintf(w, `<!doctype html><title>%s</title><h1>%s</h1>`, r.URL.Path, r.URL.Path)
	}))
	t.Cleanup(site.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	redis, storeDir, c := startManualFleet(ctx, t, site)
	req := exportclient.Request{ManualID: "canceled", Version: "1"}
	for i := range chapters {
		req.Chapters = append(req.Chapters, exportclient.Chapter{URL: fmt.Sprintf("%s/c%d.html", site.URL, i), Revision: "r1"})
	}
	job, err := c.Enqueue(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	testsupport.Eventually(t, 30*time.Second, func() error {
		if n := started.Load(); n < 2 {
			return fmt.Errorf("%d chapters loading", n)
		}
		return nil
	})
	if _, err := c.Cancel(ctx, job.TaskID); err != nil {
		t.Fatal(err)
	}
	canceledAt := time.Now()
	insp := asynq.NewInspector(asynq.RedisClientOpt{Addr: redis.Addr()})
	t.Cleanup(func() { _ = insp.Close() })
	testsupport.Eventually(t, 10*time.Second, func() error {
		active, err := insp.ListActiveTasks("default")
		if err != nil {
			return err
		}
		if len(active) > 0 {
			return fmt.Errorf("%d tasks still active, %s after the cancel", len(active), time.Since(canceledAt).Round(time.Millisecond))
		}
		return nil
	})
	if took := time.Since(canceledAt); took > 5*time.Second {
		t.Errorf("the chapters stopped %s after the cancel; the pages take 6 s", took.Round(time.Millisecond))
	}
	st, err := c.Status(ctx, job.TaskID)
	if err != nil || st.State != exportclient.StateCanceled {
		t.Fatalf("manual %s %v, want canceled", st.State, err)
	}
	n := started.Load()
	time.Sleep(2 * time.Second) // queued chapter tasks would start by now
	if started.Load() != n || time.Unix(0, lastStart.Load()).After(canceledAt.Add(time.Second)) {
		t.Errorf("chapters started after the cancel: %d fetches, then %d", n, started.Load())
	}
	stored, _ := filepath.Glob(filepath.Join(storeDir, "_chapters", "*.pdf"))
	if len(stored) != 0 {
		t.Errorf("%d chapters stored of a manual canceled while every page was loading", len(stored))
	}
}

// startManualFleet starts two workers, w1 and w2 (one tab, three handler
// slots each), on one Redis and one file store, allowed to reach site, and
// a client of them.
func startManualFleet(ctx context.Context, t *testing.T, site *httptest.Server) (*testsupport.Redis, string, *exportclient.Client) {
	t.Helper()
	redis := testsupport.StartRedis(t)
	storeDir := t.TempDir()
	siteHost := strings.TrimPrefix(site.URL, "http://")
	for _, name := range []string{"w1", "w2"} {
		cfg := loadConfig(t, "REDIS_URL="+redis.URL(), "STORAGE_URL=file://"+storeDir, "ADMIN_ADDR=",
			"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "ALLOWED_HOSTS="+siteHost, "RENDER_CONCURRENCY=1", "WORKER_CONCURRENCY=3")
		w := New(cfg, Options{Logger: slog.New(slog.DiscardHandler), Hostname: name})
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Shutdown)
	}
	return redis, storeDir, newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, AllowedHosts: siteHost})
}
