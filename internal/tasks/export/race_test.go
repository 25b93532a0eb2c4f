package export

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/lock"
	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
	"github.com/pdfexport/pdfexport/internal/storage/sidestore"
	"github.com/pdfexport/pdfexport/internal/tasks"
	"github.com/pdfexport/pdfexport/internal/tasks/outcome"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// raceRig is a handler on a real asynq server whose first attempt of every
// export is canceled by request right after it wrote its result (the hook
// sends the cancel and waits until it reached the task's context).
type raceRig struct {
	rdb      *redis.Client
	h        *Handler
	client   *exportclient.Client
	worker   *asynq.Server
	mux      *asynq.ServeMux
	canceled chan exportclient.Status
}

// newRaceRig builds the rig; retention is RESULT_RETENTION (the completed
// record's, the client's tasks').
func newRaceRig(t *testing.T, retention time.Duration) *raceRig {
	t.Helper()
	srv := testsupport.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	files, err := storage.NewFile(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	renderer, err := render.New(render.Config{ChromiumPath: testsupport.ChromiumPath(t), Concurrency: 2, Timeout: 30 * time.Second, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = renderer.Close() })
	finisher := &outcome.Finisher{RDB: rdb, Client: asynq.NewClientFromRedisClient(rdb), CallbackMaxRetry: 1, Retention: retention}
	hosts := spec.Hosts{Callbacks: allowlist.MustParse("hooks.example.com")}
	h, err := NewHandler(Config{Store: files, Renderer: renderer, Logger: log, Hosts: hosts,
		Gate:      lock.NewGate(lock.NewMutex(rdb, lock.Config{TTL: 5 * time.Second, Logger: log})),
		SideStore: &sidestore.Store{RDB: rdb},
		Finisher:  finisher, Cancellations: outcome.Cancels{RDB: rdb}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	client, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: srv.Addr()}, MaxRetry: 3,
		CallbackAllowedHosts: "hooks.example.com", Queues: []string{"default", "later"}, Retention: retention})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })

	canceled := make(chan exportclient.Status, 1)
	var hookRuns int
	var hookMu sync.Mutex
	h.hooks.afterResult = func(ctx context.Context, taskID string) {
		hookMu.Lock()
		hookRuns++
		first := hookRuns == 1
		hookMu.Unlock()
		if !first {
			return
		}
		go func() {
			st, err := client.Cancel(context.Background(), taskID)
			if err != nil && !strings.Contains(err.Error(), "final already") {
				t.Errorf("Cancel: %v", err)
			}
			canceled <- st
		}()
		select { // the cancel has reached the handler
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			t.Error("the cancel did not reach the running task")
		}
	}
	worker := asynq.NewServer(asynq.RedisClientOpt{Addr: srv.Addr()}, asynq.Config{Concurrency: 2, Queues: map[string]int{"default": 1, "later": 1},
		TaskCheckInterval: 20 * time.Millisecond, Logger: testsupport.QuietAsynq{}, LogLevel: asynq.FatalLevel,
		RetryDelayFunc: func(int, error, *asynq.Task) time.Duration { return 200 * time.Millisecond }})
	mux := asynq.NewServeMux()
	mux.Handle(tasks.TypeExport, h)

	return &raceRig{rdb: rdb, h: h, client: client, worker: worker, mux: mux, canceled: canceled}
}

// TestFinish_ACancelLandingAfterTheResultFinishesOnce: a cancel that lands
// between the result write and the handler's return (driven there by a
// hook: the cancel is sent and the task's context is canceled before the
// handler goes on). asynq then sees a canceled context and moves the task
// to retry, and the canceller archives and finishes it too. The export
// still ends once: one final state (completed, with its result), one
// announcement, one callback; the document it shares with an export that
// is still waiting is released once, so that export completes.
func TestFinish_ACancelLandingAfterTheResultFinishesOnce(t *testing.T) {
	r := newRaceRig(t, time.Hour)
	rdb, client, worker, mux, canceled := r.rdb, r.client, r.worker, r.mux, r.canceled
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	insp := asynq.NewInspectorFromRedisClient(rdb)
	if err := insp.PauseQueue("later"); err != nil {
		t.Fatal(err)
	}
	doc := "<!doctype html><h1>Shared</h1><p>" + strings.Repeat("the shared manual. ", 4<<10) + "</p>"
	waiting, err := client.Enqueue(ctx, exportclient.Request{ManualID: "m", Version: "1", HTML: doc}, exportclient.Queue("later"))
	if err != nil {
		t.Fatal(err)
	}
	ps := rdb.SSubscribe(ctx, keyspace.FinalChannel)
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if err := worker.Start(mux); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(worker.Shutdown)
	job, err := client.Enqueue(ctx, exportclient.Request{ManualID: "m", Version: "1", HTML: doc, Options: exportclient.Options{Landscape: true},
		CallbackURL: "https://hooks.example.com/pdf"})
	if err != nil {
		t.Fatal(err)
	}
	var cancelSaw exportclient.Status
	select {
	case cancelSaw = <-canceled:
	case <-ctx.Done():
		t.Fatal("the cancel never returned")
	}
	// Let the canceller archive it and asynq settle.
	testsupport.Eventually(t, 20*time.Second, func() error {
		info, err := insp.GetTaskInfo("default", job.TaskID)
		return testsupport.Unless(err == nil && (info.State == asynq.TaskStateArchived || info.State == asynq.TaskStateCompleted),
			"the export did not settle: %+v %v", info, err)
	})

	st, err := client.Status(ctx, job.TaskID)
	if err != nil || st.State != exportclient.StateCompleted || st.Result == nil || st.Result.Pages == 0 {
		t.Fatalf("status %+v, %v: want completed with its result (the cancel came too late)", st, err)
	}
	if cancelSaw.State != exportclient.StateCompleted {
		t.Errorf("Cancel reported %+v, want the recorded completed", cancelSaw)
	}
	var states []string
	timeout := time.After(500 * time.Millisecond)
collect:
	for {
		select {
		case m := <-ps.Channel():
			var f spec.Final
			if json.Unmarshal([]byte(m.Payload), &f) == nil && f.TaskID == job.TaskID {
				states = append(states, f.State)
			}
		case <-timeout:
			break collect
		}
	}
	if len(states) != 1 || states[0] != spec.StateCompleted {
		t.Errorf("announcements %v, want one: completed", states)
	}
	cb, err := insp.GetTaskInfo("default", outcome.CallbackTaskID(job.TaskID))
	if err != nil {
		t.Fatalf("callback: %v", err)
	}
	var ct tasks.Callback
	var body spec.Final
	if json.Unmarshal(cb.Payload, &ct) != nil || json.Unmarshal(ct.Body, &body) != nil || body.State != spec.StateCompleted {
		t.Errorf("callback body %s, want state completed", ct.Body)
	}
	docKey := "pdfexport:html:{" + sidestore.DocumentRef(doc).SHA256 + "}"
	if owners := rdb.HGet(ctx, docKey, "owners").Val(); owners != "1" {
		t.Errorf("document owners %q after the race, want 1 (the waiting export)", owners)
	}
	if err := insp.UnpauseQueue("later"); err != nil {
		t.Fatal(err)
	}
	if st, err := client.Wait(ctx, waiting.TaskID, 0); err != nil || st.State != exportclient.StateCompleted {
		t.Fatalf("the export sharing the document: %+v, %v", st, err)
	}
	if rdb.Exists(ctx, docKey).Val() != 0 {
		t.Error("the document outlived its last export")
	}
}

// TestFinish_ARunAfterACancelRacedTheCompletionDoesNotFinishAgain: a cancel
// landing as an export completes leaves the task archived (90 days in
// asynq) with a "completed" record. Once RESULT_RETENTION is over (2 s
// here), a dashboard "Run" of the task must still find the export
// completed: no second announcement, no callback with another body, status
// completed. The record is kept as long as the archived task (the
// canceller's Finish keeps it); and should it be gone anyway, the result
// the task stored decides, not the cancel mark.
func TestFinish_ARunAfterACancelRacedTheCompletionDoesNotFinishAgain(t *testing.T) {
	const retention = 2 * time.Second
	for _, tc := range []struct {
		name string
		// lose, when set, takes the record away before the Run.
		lose bool
	}{
		{"the record outlives RESULT_RETENTION", false},
		{"the record is lost, the stored result decides", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRaceRig(t, retention)
			rdb := r.rdb
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			insp := asynq.NewInspectorFromRedisClient(rdb)
			ps := rdb.SSubscribe(ctx, keyspace.FinalChannel)
			t.Cleanup(func() { _ = ps.Close() })
			if _, err := ps.Receive(ctx); err != nil {
				t.Fatal(err)
			}
			if err := r.worker.Start(r.mux); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(r.worker.Shutdown)
			job, err := r.client.Enqueue(ctx, exportclient.Request{ManualID: "m", Version: "1", HTML: "<h1>raced</h1>",
				CallbackURL: "https://hooks.example.com/pdf"})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-r.canceled:
			case <-ctx.Done():
				t.Fatal("the cancel never returned")
			}
			testsupport.Eventually(t, 20*time.Second, func() error {
				info, err := insp.GetTaskInfo("default", job.TaskID)
				return testsupport.Unless(err == nil && info.State == asynq.TaskStateArchived, "the raced export is not archived: %+v %v", info, err)
			})
			time.Sleep(retention + 500*time.Millisecond) // RESULT_RETENTION is over
			if tc.lose {
				rdb.Del(ctx, keyspace.Final(job.TaskID))
			} else if rec, ok, err := outcome.Recorded(ctx, rdb, job.TaskID); !ok || err != nil || rec.State != spec.StateCompleted {
				t.Errorf("after RESULT_RETENTION the record is %+v %v %v, want completed", rec, ok, err)
			}
			if err := insp.RunTask("default", job.TaskID); err != nil { // the dashboard's "Run"
				t.Fatal(err)
			}
			testsupport.Eventually(t, 20*time.Second, func() error {
				info, err := insp.GetTaskInfo("default", job.TaskID)
				return testsupport.Unless(err == nil && (info.State == asynq.TaskStateArchived || info.State == asynq.TaskStateCompleted),
					"the run did not settle: %+v %v", info, err)
			})
			var states []string
			timeout := time.After(500 * time.Millisecond)
		collect:
			for {
				select {
				case m := <-ps.Channel():
					var f spec.Final
					if json.Unmarshal([]byte(m.Payload), &f) == nil && f.TaskID == job.TaskID {
						states = append(states, f.State)
					}
				case <-timeout:
					break collect
				}
			}
			wantAnnounced := 1
			if tc.lose {
				wantAnnounced = 2 // the lost record is written again, by the Run: completed
			}
			if len(states) != wantAnnounced || slices.ContainsFunc(states, func(s string) bool { return s != spec.StateCompleted }) {
				t.Errorf("announcements %v, want %d, completed", states, wantAnnounced)
			}
			if st, err := r.client.Status(ctx, job.TaskID); err != nil || st.State != exportclient.StateCompleted {
				t.Errorf("status after the Run: %+v, %v; want completed", st, err)
			}
			cb, err := insp.GetTaskInfo("default", outcome.CallbackTaskID(job.TaskID))
			if err != nil {
				t.Fatalf("callback: %v", err)
			}
			var ct tasks.Callback
			var body spec.Final
			if json.Unmarshal(cb.Payload, &ct) != nil || json.Unmarshal(ct.Body, &body) != nil || body.State != spec.StateCompleted {
				t.Errorf("callback body %s, want state completed", ct.Body)
			}
		})
	}
}
