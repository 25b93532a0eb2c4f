package exportclient

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

func newTestClient(t *testing.T) (*Client, *testsupport.Redis) {
	t.Helper()
	srv := testsupport.StartRedis(t)
	c, err := New(Config{Redis: asynq.RedisClientOpt{Addr: srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, srv
}

// TestTaskKey_IsAsynqs: the hash Wait polls is the one asynq writes.
func TestTaskKey_IsAsynqs(t *testing.T) {
	c, _ := newTestClient(t)
	ctx := context.Background()
	job, err := c.Enqueue(ctx, Request{ManualID: "m", Version: "1", HTML: "<p>x"}, Queue("critical"))
	if err != nil {
		t.Fatal(err)
	}
	state, err := c.rdb.HGet(ctx, keyspace.AsynqTask("critical", job.TaskID), "state").Result()
	if err != nil || state != "pending" {
		t.Fatalf("HGET %s state = %q, %v; want pending", keyspace.AsynqTask("critical", job.TaskID), state, err)
	}
}

// commandCalls reads the calls of every command from INFO commandstats.
func commandCalls(t *testing.T, srv *testsupport.Redis) map[string]int {
	t.Helper()
	info, err := srv.Client().Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]int{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
		calls[strings.TrimPrefix(name, "cmdstat_")] = n
	}
	return calls
}

// TestWait_PollsOnlyTheState: while an export (with a large inline HTML) is
// pending, each poll of Wait is one HGET; the task with its payload is read
// only at the start.
func TestWait_PollsOnlyTheState(t *testing.T) {
	c, srv := newTestClient(t)
	ctx := context.Background()
	job, err := c.Enqueue(ctx, Request{ManualID: "m", Version: "1", HTML: "<p>" + strings.Repeat("x", 256<<10)})
	if err != nil {
		t.Fatal(err)
	}
	// One read first, so asynq's task-reading script is loaded and every
	// whole-task read below is one EVALSHA (not a NOSCRIPT answer and an
	// EVAL).
	if _, err := c.Status(ctx, job.TaskID); err != nil {
		t.Fatal(err)
	}
	if err := srv.Client().ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if _, err := c.Wait(wctx, job.TaskID, 10*time.Millisecond); err == nil {
		t.Fatal("Wait on a task no worker takes returned before its deadline")
	}
	calls := commandCalls(t, srv)
	full := calls["evalsha"] + calls["eval"]
	t.Logf("commands during Wait: %v", calls)
	if calls["hget"] < 10 {
		t.Errorf("%d HGETs in 500 ms at a 10 ms interval: Wait does not poll the state", calls["hget"])
	}
	// The first read, and one more once the subscription is confirmed (an
	// outcome announced before it would be in the state).
	if full > 2 {
		t.Errorf("%d scripts (whole-task reads) during Wait, want at most 2", full)
	}
}

// TestWait_ReturnsTheResultOfACompletedExport: with a real asynq server
// completing the task after a while, Wait returns completed and the result.
func TestWait_ReturnsTheResultOfACompletedExport(t *testing.T) {
	c, srv := newTestClient(t)
	server := asynq.NewServer(asynq.RedisClientOpt{Addr: srv.Addr()}, asynq.Config{Concurrency: 1, TaskCheckInterval: 20 * time.Millisecond, Logger: testsupport.QuietAsynq{}})
	mux := asynq.NewServeMux()
	mux.HandleFunc(TaskType, func(ctx context.Context, task *asynq.Task) error {
		time.Sleep(300 * time.Millisecond)
		b, _ := json.Marshal(spec.Result{ArtifactKey: "m/1/k.pdf", Pages: 3, Rendered: true})
		_, err := task.ResultWriter().Write(b)
		return err
	})
	if err := server.Start(mux); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Shutdown)
	ctx := context.Background()
	job, err := c.Enqueue(ctx, Request{ManualID: "m", Version: "1", HTML: "<p>x"})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := c.Wait(wctx, job.TaskID, 10*time.Millisecond)
	if err != nil || st.State != StateCompleted || st.Result == nil || st.Result.Pages != 3 || st.Result.ArtifactKey != "m/1/k.pdf" {
		t.Fatalf("Wait = %+v (result %+v), %v", st, st.Result, err)
	}
}

// TestWait_EndingDuringAPollKeepsTheState: with every Redis reply slowed
// (a proxy holds them back) the wait ends while a poll is in flight; Wait
// still returns the state it read, not an empty Status.
func TestWait_EndingDuringAPollKeepsTheState(t *testing.T) {
	srv := testsupport.StartRedis(t)
	proxy := testsupport.StartSlowProxy(t, srv.Addr())
	c, err := New(Config{Redis: asynq.RedisClientOpt{Addr: proxy.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	job, err := c.Enqueue(context.Background(), Request{ManualID: "m", Version: "1", HTML: "<p>x"})
	if err != nil {
		t.Fatal(err)
	}
	proxy.SetDelay(100 * time.Millisecond)
	for i := range 5 { // the deadline lands in a poll most times, not always
		ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
		st, err := c.Wait(ctx, job.TaskID, 10*time.Millisecond)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || st.TaskID != job.TaskID || st.State != StatePending {
			t.Fatalf("wait %d: Wait = %+v, %v; want the pending state and the deadline", i, st, err)
		}
	}
}
