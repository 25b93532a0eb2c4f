package admin

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestDashboard_ShowsQueuesAndFinishedExportInBrowser drives the real
// asynqmon UI in headless Chromium: our queues are listed, and a completed
// pdf:export task is shown with its result as readable JSON.
func TestDashboard_ShowsQueuesAndFinishedExportInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium")
	}
	redis := testsupport.StartRedis(t)
	opt := asynq.RedisClientOpt{Addr: redis.Addr()}

	// A finished export: a worker-side asynq server completes one task and
	// writes a result document, as the real handler does.
	srv := asynq.NewServer(opt, asynq.Config{Concurrency: 1, Queues: map[string]int{"critical": 1, "default": 1},
		TaskCheckInterval: 20 * time.Millisecond, LogLevel: asynq.FatalLevel})
	mux := asynq.NewServeMux()
	mux.HandleFunc("pdf:export", func(ctx context.Context, t *asynq.Task) error {
		_, err := t.ResultWriter().Write([]byte(`{"artifact_key":"ops-guide/2026.11.3/0123456789abcdef.pdf","rendered":true,"pages":42}`))
		return err
	})
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	client := asynq.NewClient(opt)
	t.Cleanup(func() { _ = client.Close() })
	info, err := client.Enqueue(asynq.NewTask("pdf:export", []byte(`{"v":1,"manual_id":"ops-guide","version":"2026.11.3","source":{"html":"<p>x"}}`)),
		asynq.Queue("critical"), asynq.Retention(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	// A pending task on a queue no server here consumes.
	if _, err := client.Enqueue(asynq.NewTask("pdf:export", []byte(`{}`)), asynq.Queue("batch")); err != nil {
		t.Fatal(err)
	}
	insp := asynq.NewInspector(opt)
	t.Cleanup(func() { _ = insp.Close() })
	testsupport.Eventually(t, 10*time.Second, func() error {
		ti, err := insp.GetTaskInfo("critical", info.ID)
		return testsupport.Unless(err == nil && ti.State == asynq.TaskStateCompleted, "task not completed: %+v %v", ti, err)
	})

	web := httptest.NewServer(Handler(Config{Dashboard: &DashboardConfig{Redis: opt}}))
	t.Cleanup(web.Close)

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(testsupport.ChromiumPath(t)), chromedp.NoSandbox,
			chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-dev-shm-usage", true),
			chromedp.UserDataDir(t.TempDir()))...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil { // start the browser without a deadline
		t.Fatal(err)
	}
	pageText := func(url, want string) string {
		t.Helper()
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(tctx, chromedp.Navigate(url)); err != nil {
			t.Fatalf("navigate %s: %v", url, err)
		}
		var text string
		for {
			text, err = chromedp.Run(tctx, chromedp.Evaluate[string]("document.body.innerText"))
			if err == nil && strings.Contains(text, want) {
				return text
			}
			if tctx.Err() != nil {
				t.Fatalf("%s never showed %q; page text:\n%s", url, want, text)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	queues := pageText(web.URL+"/monitoring/", "critical")
	if !strings.Contains(queues, "batch") {
		t.Errorf("dashboard home does not list the batch queue:\n%s", queues)
	}
	tasks := pageText(web.URL+"/monitoring/queues/critical?status=completed", info.ID[:8])
	if !strings.Contains(tasks, "pdf:export") {
		t.Errorf("completed tasks page lacks the task type:\n%s", tasks)
	}
	detail := pageText(web.URL+"/monitoring/queues/critical/tasks/"+info.ID+"?status=completed", "0123456789abcdef")
	if !strings.Contains(detail, `"rendered": true`) {
		t.Errorf("task detail does not show the result as indented JSON:\n%s", detail)
	}
}
