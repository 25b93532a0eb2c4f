package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/render/proctree"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// niceAt is the nice value (field 19) of a stat file of /proc.
func niceAt(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 17 {
		return 0, false
	}
	n, err := strconv.Atoi(fields[16])
	return n, err == nil
}

// chromiumBrowsers are the Chromium browser processes (no --type=) whose
// parent is pid.
func chromiumBrowsers(pid int) []int {
	var out []int
	for _, p := range proctree.Live() {
		if p.PPID != pid {
			continue
		}
		cmd := strings.Join(proctree.Cmdline(p.PID), " ")
		if strings.Contains(cmd, "chrom") && !strings.Contains(cmd, "--type=") {
			out = append(out, p.PID)
		}
	}
	return out
}

// lowestNice is the lowest nice value of every thread of pids, and how
// many threads it read.
func lowestNice(pids []int) (lowest, threads int) {
	lowest = 20
	for _, pid := range pids {
		tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		for _, task := range tasks {
			tid, err := strconv.Atoi(task.Name())
			if err != nil {
				continue
			}
			if n, ok := threadNice(pid, tid); ok {
				lowest, threads = min(lowest, n), threads+1
			}
		}
	}
	return lowest, threads
}

// threadNice is the nice value of one thread (field 19 of its stat).
func threadNice(pid, tid int) (int, bool) {
	return niceAt("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/stat")
}

// TestWorker_InteractiveExportsPassTheBatch: with every handler slot and
// every tab of the batch lane busy on renders that do not end, and more
// batch work queued behind them, an interactive export is the next to
// render and completes at once; the batch lane's Chromium runs at
// BATCH_NICE. The same worker without a batch lane (BATCH_QUEUES empty)
// makes it wait behind the batch: the test would prove nothing otherwise.
func TestWorker_InteractiveExportsPassTheBatch(t *testing.T) {
	// Serial (no t.Parallel): it reads the nice value of every chromium of this process.
	for _, tc := range []struct {
		name        string
		batchQueues string
		passes      bool
	}{
		{"batch lane", "batch", true},
		{"one lane", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			redis := testsupport.StartRedis(t)
			cfg := loadConfig(t, "REDIS_URL="+redis.URL(), "STORAGE_URL=file://"+t.TempDir(), "ADMIN_ADDR=",
				"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "RENDER_CONCURRENCY=1", "WORKER_CONCURRENCY=2",
				"BATCH_CONCURRENCY=2", "BATCH_QUEUES="+tc.batchQueues, "RENDER_TIMEOUT=60s", "QUEUES=default=3,batch=1", "SHUTDOWN_TIMEOUT=1s")
			startWorker(t, cfg, Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, Queues: []string{"default", "batch"}})
			insp := asynq.NewInspectorFromRedisClient(redis.Client())
			var batch []exportclient.Enqueued
			for i := range 6 { // more than the lane holds: some stay pending
				job, err := c.Enqueue(ctx, exportclient.Request{ManualID: "catalogue", Version: fmt.Sprint(i),
					HTML: "<p>batch " + fmt.Sprint(i), Options: exportclient.Options{WaitFor: "window.__never === true"}}, exportclient.Queue("batch"))
				if err != nil {
					t.Fatal(err)
				}
				batch = append(batch, job)
			}
			testsupport.Eventually(t, 30*time.Second, func() error { // the batch holds its slots
				n := 0
				for _, job := range batch {
					if info, err := insp.GetTaskInfo("batch", job.TaskID); err == nil && info.State == asynq.TaskStateActive {
						n++
					}
				}
				return testsupport.Unless(n == 2, "%d batch tasks active, want the lane's 2", n)
			})
			time.Sleep(300 * time.Millisecond) // and its tab
			job, err := c.Enqueue(ctx, exportclient.Request{ManualID: "reader", Version: "1", HTML: "<h1>Export PDF</h1>"})
			if err != nil {
				t.Fatal(err)
			}
			wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
			st, err := c.Wait(wctx, job.TaskID, 0)
			wcancel()
			if tc.passes && (err != nil || st.State != exportclient.StateCompleted) {
				t.Fatalf("the interactive export behind a busy batch: %+v, %v; want completed at once", st, err)
			}
			if !tc.passes && st.State == exportclient.StateCompleted {
				t.Fatalf("without a batch lane the interactive export did not wait: the test proves nothing")
			}
			if !tc.passes {
				return
			}
			// Every thread of the batch lane's browser, its own and its
			// children's, runs at BATCH_NICE or lower priority: Chromium
			// sets its threads' nice values itself, which with
			// CAP_SYS_NICE (as root) would raise most of them back to the
			// interactive browser's. The interactive browser has threads
			// below it.
			niced, plain := 0, 0
			for _, browser := range chromiumBrowsers(os.Getpid()) {
				lowest, threads := lowestNice(append([]int{browser}, proctree.Descendants(browser)...))
				switch {
				case threads == 0:
				case lowest >= cfg.BatchNice:
					niced++
				default:
					plain++
				}
			}
			if niced != 1 || plain != 1 {
				t.Errorf("browsers with every thread at nice ≥ %d: %d, with threads below: %d; want the batch lane's one and the interactive one", cfg.BatchNice, niced, plain)
			}
			// Cancel frees the batch lane's slot and tab: the next batch
			// task takes them.
			if _, err := c.Cancel(ctx, batch[0].TaskID); err != nil {
				t.Fatal(err)
			}
			testsupport.Eventually(t, 30*time.Second, func() error {
				for _, job := range batch[2:] {
					if info, err := insp.GetTaskInfo("batch", job.TaskID); err == nil && info.State == asynq.TaskStateActive {
						return nil
					}
				}
				return errors.New("no pending batch task took the canceled one's slot")
			})
		})
	}
}

// TestWorker_BatchProgressesUnderEndlessInteractiveLoad: interactive exports
// that never stop coming do not starve the batch lane: a batch export
// completes while they run.
func TestWorker_BatchProgressesUnderEndlessInteractiveLoad(t *testing.T) {
	// Serial (no t.Parallel): the lanes it compares share the CPU with nothing else.
	redis := testsupport.StartRedis(t)
	cfg := loadConfig(t, "REDIS_URL="+redis.URL(), "STORAGE_URL=file://"+t.TempDir(), "ADMIN_ADDR=",
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "QUEUES=default=3,batch=1")
	startWorker(t, cfg, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, Queues: []string{"default", "batch"}})
	stop := make(chan struct{})
	done := make(chan int)
	go func() { // an interactive load that never stops: always more pending than the lane serves
		n := 0
		defer func() { done <- n }()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := c.Enqueue(ctx, exportclient.Request{ManualID: "reader", Version: fmt.Sprint(i),
				HTML: "<h1>interactive " + fmt.Sprint(i) + "</h1>" + strings.Repeat("<p>text</p>", 200)}); err == nil {
				n++
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	time.Sleep(time.Second) // the interactive lane is saturated
	job, err := c.Enqueue(ctx, exportclient.Request{ManualID: "catalogue", Version: "1", HTML: "<h1>batch</h1>"}, exportclient.Queue("batch"))
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	st, err := c.Wait(wctx, job.TaskID, 0)
	wcancel()
	close(stop)
	n := <-done
	if err != nil || st.State != exportclient.StateCompleted {
		t.Fatalf("the batch export under endless interactive load (%d enqueued): %+v, %v", n, st, err)
	}
	pending, _ := asynq.NewInspectorFromRedisClient(redis.Client()).GetQueueInfo("default")
	if pending == nil || pending.Pending == 0 {
		t.Errorf("the interactive load was not endless (pending %+v): the test proves nothing", pending)
	}
}

// TestWorker_OnePostProcessingAcrossLanes: the interactive and the batch
// lane of one worker share its one post-processing slot, so pdfcpu holds
// one document at a time per worker (MaxPostProcessBytes), not one per
// lane. Each post-processing holds the slot until another one joins it or
// 1.5 s passed: with a slot per lane, the other lane's joins at once.
func TestWorker_OnePostProcessingAcrossLanes(t *testing.T) {
	// Serial (no t.Parallel): its post-processing holds are real-time windows.
	redis := testsupport.StartRedis(t)
	cfg := loadConfig(t, "REDIS_URL="+redis.URL(), "STORAGE_URL=file://"+t.TempDir(), "ADMIN_ADDR=",
		"QUEUES=default=1,batch=1", "BATCH_QUEUES=batch", "WORKER_CONCURRENCY=2", "BATCH_CONCURRENCY=2", "TASK_CHECK_INTERVAL=20ms")
	var now, most, total atomic.Int64
	hold := func(delta int) {
		if delta < 0 {
			now.Add(-1)
			return
		}
		total.Add(1)
		n := now.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		for deadline := time.Now().Add(1500 * time.Millisecond); now.Load() < 2 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
	}
	startWorker(t, cfg, Options{Renderer: stubRenderer{pdf: onePagePDF(t)}, PostProcessing: hold})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, Queues: []string{"default", "batch"}})
	var jobs []exportclient.Enqueued
	for i := range 4 {
		queue := []string{"default", "batch"}[i%2]
		job, err := c.Enqueue(ctx, exportclient.Request{ManualID: "m-" + queue, Version: fmt.Sprint(i), HTML: "<p>x",
			Options: exportclient.Options{Watermark: &exportclient.Watermark{Text: "DRAFT"}}}, exportclient.Queue(queue))
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, job)
	}
	for _, job := range jobs {
		if st, err := c.Wait(ctx, job.TaskID, 20*time.Millisecond); err != nil || st.State != exportclient.StateCompleted {
			t.Fatalf("export %s: %+v, %v", job.TaskID, st, err)
		}
	}
	if total.Load() != 4 {
		t.Fatalf("%d post-processings seen, want 4: the test proves nothing", total.Load())
	}
	if most.Load() != 1 {
		t.Fatalf("at most %d post-processings at once in one worker, want 1", most.Load())
	}
}
