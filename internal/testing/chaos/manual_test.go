package chaos

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/exportclient"
)

// TestChaos_WorkerSIGKILLedMidManual (scenario 11): the worker running a
// manual's task is SIGKILLed while its chapters are being printed across
// two workers. The other worker goes on with the chapters queued as tasks
// of their own; the manual's task, re-delivered after its lease, reuses
// every chapter stored and completes. Nothing is lost, and no chapter is
// printed twice but the one the killed worker had in its tab (its render
// never stored).
func TestChaos_WorkerSIGKILLedMidManual(t *testing.T) {
	sc := &Scenario{Name: "11 worker SIGKILLed mid-manual", Fault: "SIGKILL of the worker running a manual's task while its chapters print", Faults: 1}
	record(t, sc)
	const chapters = 10
	var hits [chapters]atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var i int
		if _, err := fmt.Sscanf(r.URL.Path, "/c%d.html", &i); err != nil || i < 0 || i >= chapters {
			http.NotFound(w, r)
			return
		}
		hits[i].Add(1)
		time.Sleep(700 * time.Millisecond)
		fmt.Fprintf(w, `<!doctype html><title>Chapter %d</title><h1 id="c">Chapter %d</h1><p><a href="c%d.html#c">next</a></p>`, i, i, (i+1)%chapters)
	}))
	t.Cleanup(site.Close)
	host := strings.TrimPrefix(site.URL, "http://")
	env := []string{"ALLOWED_HOSTS=" + host, "LOCK_TTL=3s"}
	c := newCluster(t, clusterConfig{Workers: 2, Env: env})
	c.countLeaks(sc)
	req := exportclient.Request{ManualID: "chaos-manual", Version: "1", Options: exportclient.Options{Outline: true}}
	for i := range chapters {
		req.Chapters = append(req.Chapters, exportclient.Chapter{URL: fmt.Sprintf("%s/c%d.html", site.URL, i), Revision: "r1"})
	}
	e := c.enqueue("s11-manual", req)
	c.waitState(e.taskID, 30*time.Second, exportclient.StateActive)
	holder := waitLog(t, c.live(), `msg="manual: storing its chapters" task_id=`+e.taskID, 30*time.Second)
	// Some chapters stored, not all: the kill lands mid-manual.
	var done int
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		st, err := c.client.Status(t.Context(), e.taskID)
		if err == nil && st.Progress != nil && st.Progress.ChaptersDone >= 2 {
			done = st.Progress.ChaptersDone
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if done == 0 || done >= chapters {
		t.Fatalf("the manual's progress did not reach 2..%d chapters before the kill (%d)\n%s", chapters-1, done, holder.Output())
	}
	c.crash(holder)
	killedAt := time.Now()
	if full() {
		sc.Notes = "real asynq lease expiry"
		c.startWorker(env...)
	} else {
		sc.Notes = "quick run: asynq leases of the killed worker's tasks fast-forwarded"
		c.fastForwardLease("default", e.taskID)
		c.startWorker(env...)
	}
	c.waitAll([]*export{e}, 200*time.Second)
	c.verdict(sc, []*export{e})
	if e.status.State != exportclient.StateCompleted {
		t.Fatalf("manual: %s %q", e.status.State, e.status.Error)
	}
	if got := e.status.Result.Chapters; got == nil || got.Total != chapters {
		t.Fatalf("chapters %+v, want %d", got, chapters)
	}
	stored, _ := filepath.Glob(filepath.Join(c.storeDir, "_chapters", "*.pdf"))
	if len(stored) != chapters {
		t.Errorf("%d chapters stored, want %d", len(stored), chapters)
	}
	var fetches, twice int64
	for i := range chapters {
		n := hits[i].Load()
		fetches += n
		if n > 1 {
			twice++
		}
		if n > 2 {
			t.Errorf("chapter %d fetched %d times", i, n)
		}
	}
	// RENDER_CONCURRENCY=1: the killed worker had at most one chapter in
	// its tab.
	if twice > 1 {
		t.Errorf("%d chapters fetched twice, want at most the one the killed worker was printing", twice)
	}
	if _, err := os.Stat(c.storeDir); err != nil {
		t.Fatal(err)
	}
	sc.Notes += fmt.Sprintf("; %d of %d chapters stored at the kill, %d fetches in all, manual completed %s after the kill",
		done, chapters, fetches, time.Since(killedAt).Round(time.Second))
}
