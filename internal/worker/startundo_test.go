package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/render/proctree"
	"github.com/pdfexport/pdfexport/internal/tasks/export"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// ownedGoroutines name what a worker's components run in goroutines of
// their own: each count must be back at its value before Start.
var ownedGoroutines = []string{
	"pdfexport/internal/worker.(*Worker)",
	"pdfexport/internal/render.",
	"pdfexport/internal/queue/doorbell.",
	"pdfexport/internal/tasks/outcome.",
	"pdfexport/internal/render/sourceauth.",
	"pdfexport/internal/storage.",
	"pdfexport/internal/queue/fleet.",
	"chromedp/chromedp",
	"hibiken/asynq",
	"redis/go-redis/v9",
}

func goroutineCounts() map[string]int {
	n := map[string]int{}
	for _, fn := range ownedGoroutines {
		n[fn] = testsupport.Goroutines(fn)
	}
	return n
}

// chromiumsOfTest are the Chromium processes below the test process.
func chromiumsOfTest() []int {
	var out []int
	for _, pid := range proctree.Descendants(os.Getpid()) {
		if strings.Contains(strings.Join(proctree.Cmdline(pid), " "), "chrom") {
			out = append(out, pid)
		}
	}
	return out
}

// redisInfo reads one integer field of INFO from rdb.
func redisInfo(t *testing.T, rdb *redis.Client, field string) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "clients", "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + field + `:(\d+)`).FindStringSubmatch(info)
	if m == nil {
		t.Fatalf("INFO has no %s", field)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestWorker_FailedStartUndoesWhatStarted: when a step of Start fails, the
// steps before it are undone before Start returns, without Shutdown: their
// goroutines are gone, Chromium has exited, and the Redis clients are
// closed (the queue Redis counts no connection of the worker's).
func TestWorker_FailedStartUndoesWhatStarted(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0") // ADMIN_ADDR's port, taken
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = taken.Close() })
	refusing := testsupport.StartRedisWith(t, "--requirepass", "not-the-workers")
	rules := filepath.Join(t.TempDir(), "source-auth.json")
	if err := os.WriteFile(rules, []byte(`{"rules": [{"hosts": "http://127.0.0.1:1", "headers": {"Authorization": "env:UNDO_TEST_TOKEN"}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("UNDO_TEST_TOKEN", "Bearer undo-test")
	tests := []struct {
		name    string
		environ []string
		failure string // what the error names
	}{
		{name: "admin port taken (a late step)", environ: []string{"ADMIN_ADDR=" + taken.Addr().String()},
			failure: "ADMIN_ADDR=" + taken.Addr().String()},
		{name: "lock Redis refuses the worker (a middle step)", environ: []string{"ADMIN_ADDR=127.0.0.1:0",
			"LOCK_REDIS_URL=" + refusing.URL()}, failure: "lock Redis"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			queue := testsupport.StartRedis(t)
			rdb := queue.Client()
			cfg := loadConfig(t, append([]string{"REDIS_URL=" + queue.URL(), "STORAGE_URL=file://" + t.TempDir(),
				"CHROMIUM_PATH=" + testsupport.ChromiumPath(t), "SOURCE_AUTH_FILE=" + rules, "TASK_DOORBELL=true",
				"QUEUES=default=1,batch=1", "BATCH_QUEUES=batch"}, tc.environ...)...)
			connected, received := redisInfo(t, rdb, "connected_clients"), redisInfo(t, rdb, "total_connections_received")
			before := goroutineCounts()
			if left := chromiumsOfTest(); len(left) > 0 {
				t.Fatalf("Chromium processes %v running before the start; the test cannot tell whose", left)
			}
			var started []int // Chromium's processes, once the renderer is up
			w := New(cfg, Options{Logger: slog.New(slog.DiscardHandler), WrapRenderer: func(r export.Renderer) export.Renderer {
				if started == nil {
					started = chromiumsOfTest()
				}
				return r
			}})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			err := w.Start(ctx)
			t.Cleanup(w.Shutdown) // only if the test fails: Start left something
			if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), tc.failure) {
				t.Fatalf("Start = %v, want ErrUnavailable naming %s", err, tc.failure)
			}
			if len(started) == 0 {
				t.Fatal("no Chromium ran before the failing step; the test proves nothing")
			}
			if redisInfo(t, rdb, "total_connections_received") <= received {
				t.Fatal("the worker never connected to the queue Redis; the test proves nothing")
			}
			if left := proctree.Alive(started); len(left) > 0 {
				t.Errorf("Chromium processes %v still run after the failed start", left)
			}
			testsupport.Eventually(t, 10*time.Second, func() error {
				var leaks []string
				for fn, n := range goroutineCounts() {
					if n > before[fn] {
						leaks = append(leaks, fmt.Sprintf("%s: %d, %d before", fn, n, before[fn]))
					}
				}
				if len(leaks) > 0 {
					buf := make([]byte, 1<<20)
					return fmt.Errorf("goroutines left after the failed start: %v\n%s", leaks, buf[:runtime.Stack(buf, true)])
				}
				return nil
			})
			testsupport.Eventually(t, 10*time.Second, func() error {
				n := redisInfo(t, rdb, "connected_clients")
				return testsupport.Unless(n <= connected, "the queue Redis has %d connections, %d before the start: a client was not closed", n, connected)
			})
		})
	}
}
