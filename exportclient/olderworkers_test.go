package exportclient

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/queue/fleet"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestEnqueue_OlderWorkersGate: an envelope that needs envelope version 2
// is not written while a worker that serves only version 1 (an asynq server
// of the queue without an announcement: a release before v0.1.0) serves its
// queue: refused naming the worker, nothing stored or queued, unless
// OlderWorkers says wait (until it is gone or announces 2) or allow. An
// envelope of version 1 is never held back, and a queue no older worker
// serves is not either.
func TestEnqueue_OlderWorkersGate(t *testing.T) {
	srv := testsupport.StartRedis(t)
	ctx := context.Background()
	rdb := srv.Client()
	t.Cleanup(func() { _ = rdb.Close() })
	// A real asynq server of the queue default, in this process: asynq
	// registers it under this host and pid, which is what an old worker
	// looks like until an announcement of that host and pid appears.
	server := asynq.NewServer(asynq.RedisClientOpt{Addr: srv.Addr()}, asynq.Config{Queues: map[string]int{"default": 1},
		Logger: testsupport.QuietAsynq{}, TaskCheckInterval: 100 * time.Millisecond})
	if err := server.Start(asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return nil })); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Shutdown)
	insp := asynq.NewInspectorFromRedisClient(rdb)
	// Paused, so that the server leaves the tasks for the test to read.
	if err := insp.PauseQueue("default"); err != nil {
		t.Fatal(err)
	}
	testsupport.Eventually(t, 10*time.Second, func() error {
		s, err := insp.Servers()
		if err != nil || len(s) == 0 {
			return fmt.Errorf("asynq lists no server yet (%v)", err)
		}
		return nil
	})
	self := fleet.Self("v0.1.0-test", []string{"default"})
	older := fleet.Announcement{Host: self.Host, PID: self.PID, Version: "an older one", Envelope: 1}
	host := fmt.Sprintf("%s pid %d", self.Host, os.Getpid())
	req := Request{ManualID: "m", Version: "1", HTML: "<p>x", Options: Options{Encryption: &Encryption{UserPassword: "open-sesame", OwnerPassword: "owner-sesame"}}}

	for _, tc := range []struct {
		name     string
		policy   OlderWorkers
		announce *fleet.Announcement // nil: none
		later    *fleet.Announcement // announced 1.5 s into the enqueue
		opts     []EnqueueOption
		deadline time.Duration
		wantV    int      // the envelope's version; 0: refused
		wantErr  []string // what the refusal names
	}{
		{name: "version 1 with an unannounced worker", wantV: 1},
		{name: "version 2 with an unannounced worker", opts: []EnqueueOption{EnvelopeVersion(2)},
			wantErr: []string{host, "announces no version", "envelope version 2", "queue \"default\"", "OLDER_WORKERS"}},
		{name: "version 2 with a worker that announces version 1", announce: &older, opts: []EnqueueOption{EnvelopeVersion(2)},
			wantErr: []string{host, "an older one", "up to 1"}},
		{name: "version 2 with a worker that announces version 2", announce: &self, opts: []EnqueueOption{EnvelopeVersion(2)}, wantV: 2},
		{name: "version 2 on a queue no older worker serves", opts: []EnqueueOption{EnvelopeVersion(2), Queue("critical")}, wantV: 2},
		{name: "allow", policy: AllowOlderWorkers, opts: []EnqueueOption{EnvelopeVersion(2)}, wantV: 2},
		{name: "wait until the worker announces version 2", policy: WaitForOlderWorkers, later: &self,
			opts: []EnqueueOption{EnvelopeVersion(2)}, deadline: 20 * time.Second, wantV: 2},
		{name: "wait as long as the context lets it", policy: WaitForOlderWorkers, opts: []EnqueueOption{EnvelopeVersion(2)},
			deadline: 1500 * time.Millisecond, wantErr: []string{host, "waited for them until: context deadline exceeded"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// What the previous case left: its announcement, tasks, passwords.
			if err := rdb.Del(ctx, keyspace.Worker(self.Host, self.PID)).Err(); err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{"default", "critical"} {
				_, _ = insp.DeleteAllPendingTasks(q)
			}
			if keys, _ := rdb.Keys(ctx, "pdfexport:passwords:*").Result(); len(keys) > 0 {
				rdb.Del(ctx, keys...)
			}
			if tc.announce != nil {
				if err := fleet.Announce(ctx, rdb, *tc.announce); err != nil {
					t.Fatal(err)
				}
			}
			c, err := New(Config{Redis: asynq.RedisClientOpt{Addr: srv.Addr()}, OlderWorkers: tc.policy})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			ectx := ctx
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ectx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			var wg sync.WaitGroup
			if tc.later != nil {
				wg.Go(func() {
					time.Sleep(1500 * time.Millisecond)
					if err := fleet.Announce(ctx, rdb, *tc.later); err != nil {
						t.Error(err)
					}
				})
			}
			start := time.Now()
			job, err := c.Enqueue(ectx, req, tc.opts...)
			wg.Wait()
			if tc.wantV == 0 {
				var oe *OlderWorkersError
				if !errors.Is(err, ErrOlderWorkers) || !errors.As(err, &oe) || len(oe.Workers) != 1 {
					t.Fatalf("err = %v, want an *OlderWorkersError naming one worker", err)
				}
				for _, part := range tc.wantErr {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("error %q does not name %q", err, part)
					}
				}
				// Nothing written: no task, no passwords beside it.
				if keys, _ := rdb.Keys(ctx, "pdfexport:passwords:*").Result(); len(keys) != 0 {
					t.Errorf("a refused export left %v", keys)
				}
				if q, err := insp.GetQueueInfo("default"); err == nil && q.Size != 0 {
					t.Errorf("a refused export was queued: %d tasks", q.Size)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if tc.later != nil && time.Since(start) < time.Second {
				t.Errorf("enqueued after %v, before the worker announced version 2", time.Since(start))
			}
			info, err := insp.GetTaskInfo(job.Queue, job.TaskID)
			if err != nil {
				t.Fatal(err)
			}
			env, err := spec.DecodeEnvelope(info.Payload)
			if err != nil || env.V != tc.wantV {
				t.Fatalf("envelope v %d (%v), want %d: %s", env.V, err, tc.wantV, info.Payload)
			}
		})
	}
	c, _ := newTestClient(t)
	if _, err := c.Enqueue(ctx, req, EnvelopeVersion(spec.EnvelopeVersion+1)); firstField(err) != "envelope_version" {
		t.Errorf("a version this build does not know: %v, want a FieldError on envelope_version", err)
	}
}
