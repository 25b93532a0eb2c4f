package exportclient_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/platform/config"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

func TestClient_ValidationNamesTheField(t *testing.T) {
	srv := testsupport.StartRedis(t)
	c, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: srv.Addr()}, AllowedHosts: "docs.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Enqueue(context.Background(), exportclient.Request{ManualID: "m", Version: "1", URL: "http://10.0.0.1/"})
	var fe *exportclient.FieldError
	if !errors.Is(err, exportclient.ErrInvalid) || !errors.As(err, &fe) || fe.Field != "source.url" {
		t.Fatalf("Enqueue = %v, want a FieldError on source.url", err)
	}
}

// TestClient_RejectsQueuesNoWorkerServes: a task on a queue no worker serves
// would wait for ever; the client refuses it, naming the field.
func TestClient_RejectsQueuesNoWorkerServes(t *testing.T) {
	srv := testsupport.StartRedis(t)
	for _, tc := range []struct {
		queues []string
		queue  string
		ok     bool
	}{
		{nil, "batch", true}, // the worker's default QUEUES
		{nil, "anything", false},
		{[]string{"reports"}, "reports", true},
		{[]string{"reports"}, "default", false},
	} {
		c, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: srv.Addr()}, Queues: tc.queues, Queue: tc.queue})
		if err != nil {
			if tc.ok {
				t.Fatalf("New(queues %v, queue %q): %v", tc.queues, tc.queue, err)
			}
			continue // a default queue no worker serves is refused at New
		}
		_, err = c.Enqueue(context.Background(), exportclient.Request{ManualID: "m", Version: "1", HTML: "x"}, exportclient.Queue(tc.queue))
		var fe *exportclient.FieldError
		switch {
		case tc.ok && err != nil:
			t.Errorf("queues %v, queue %q: %v", tc.queues, tc.queue, err)
		case !tc.ok && (!errors.As(err, &fe) || fe.Field != "queue"):
			t.Errorf("queues %v, queue %q: err %v, want a FieldError on queue", tc.queues, tc.queue, err)
		}
		c.Close()
	}
}

func TestClient_EnqueueStatusNotFound(t *testing.T) {
	srv := testsupport.StartRedis(t)
	c, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	job, err := c.Enqueue(ctx, exportclient.Request{ManualID: "m", Version: "1", HTML: "<p>hi"}, exportclient.Queue("critical"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(ctx, job.TaskID)
	if err != nil || st.State != exportclient.StatePending || st.Queue != "critical" || st.Final() {
		t.Fatalf("Status = %+v, %v", st, err)
	}
	if _, err := c.Status(ctx, "nope"); !errors.Is(err, exportclient.ErrNotFound) {
		t.Fatalf("Status(nope) = %v, want ErrNotFound", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := c.Wait(wctx, job.TaskID, 20*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on a task no worker takes = %v, want the deadline", err)
	}
}

func TestClient_RedisDownIsUnavailable(t *testing.T) {
	c, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: "127.0.0.1:" + strconv.Itoa(testsupport.FreePort(t))}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Enqueue(context.Background(), exportclient.Request{ManualID: "m", Version: "1", HTML: "x"})
	if !errors.Is(err, exportclient.ErrUnavailable) {
		t.Fatalf("Enqueue = %v, want ErrUnavailable", err)
	}
}

// TestClient_ZeroConfigAgreesWithTheWorkersDefaults: a client left at its
// zero values enqueues what a worker left at its defaults expects: the
// queue it serves, its retries, deadline and retention.
func TestClient_ZeroConfigAgreesWithTheWorkersDefaults(t *testing.T) {
	worker, err := config.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := testsupport.StartRedis(t)
	c, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	job, err := c.Enqueue(context.Background(), exportclient.Request{ManualID: "m", Version: "1", HTML: "x"})
	if err != nil {
		t.Fatal(err)
	}
	insp := asynq.NewInspector(asynq.RedisClientOpt{Addr: srv.Addr()})
	t.Cleanup(func() { _ = insp.Close() })
	info, err := insp.GetTaskInfo(job.Queue, job.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if _, served := worker.QueueWeights[info.Queue]; !served {
		t.Errorf("queue %q is not on the workers' default QUEUES %q", info.Queue, worker.Queues)
	}
	for _, q := range exportclient.DefaultQueues {
		if _, served := worker.QueueWeights[q]; !served {
			t.Errorf("DefaultQueues names %q, not on the workers' default QUEUES %q", q, worker.Queues)
		}
	}
	if len(exportclient.DefaultQueues) != len(worker.QueueWeights) {
		t.Errorf("DefaultQueues %v, workers' QUEUES %q", exportclient.DefaultQueues, worker.Queues)
	}
	if info.MaxRetry != worker.MaxRetry || info.Timeout != worker.TaskTimeout || info.Retention != worker.ResultRetention {
		t.Errorf("task: max retry %d, timeout %s, retention %s; workers' defaults MAX_RETRY %d, TASK_TIMEOUT %s, RESULT_RETENTION %s",
			info.MaxRetry, info.Timeout, info.Retention, worker.MaxRetry, worker.TaskTimeout, worker.ResultRetention)
	}
}
