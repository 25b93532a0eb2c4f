package outcome

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage/sidestore"
	"github.com/pdfexport/pdfexport/internal/tasks"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// announcements counts the outcomes announced for each task until stop.
func announcements(t *testing.T, rdb redis.UniversalClient) (stop func() map[string][]string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ps := rdb.SSubscribe(ctx, keyspace.FinalChannel)
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	seen := map[string][]string{}
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range ps.Channel() {
			var f spec.Final
			if err := json.Unmarshal([]byte(m.Payload), &f); err == nil {
				mu.Lock()
				seen[f.TaskID] = append(seen[f.TaskID], f.State)
				mu.Unlock()
			}
		}
	}()
	return func() map[string][]string {
		time.Sleep(100 * time.Millisecond) // messages in flight
		cancel()
		_ = ps.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// TestFinish_RacingCallsFinishOnce: a completion and a cancel (and a sweep)
// finishing one export at the same moment: the first to record wins and is
// held, by a hook, between its record and its release while the others run
// in full. One state is recorded, announced once; what the task owns is
// released once; the others report the winner's state and change nothing.
func TestFinish_RacingCallsFinishOnce(t *testing.T) {
	_, rdb, fin := setup(t)
	ctx := context.Background()
	const task = "racing"
	env := ownedEnvelope(t, rdb, task, "<p>shared")
	// Another export owns the same document and is not final.
	if _, err := (&sidestore.Store{RDB: rdb}).PutHTML(ctx, "bystander", "<p>shared", time.Hour); err != nil {
		t.Fatal(err)
	}
	stop := announcements(t, rdb)
	held, resume := make(chan struct{}), make(chan struct{})
	fin.afterRecord = func(string) error { close(held); <-resume; return nil }

	results := make(chan Finished, 3)
	go func() {
		done, err := fin.Finish(ctx, "default", env, spec.Final{TaskID: task, State: spec.StateCompleted, Result: &spec.Result{Pages: 3}})
		if err != nil {
			t.Error(err)
		}
		results <- done
	}()
	<-held // the completion recorded its state
	fin.afterRecord = nil
	for _, state := range []string{spec.StateCanceled, spec.StateFailed} {
		done, err := fin.Finish(ctx, "default", env, spec.Final{TaskID: task, State: state})
		if err != nil {
			t.Fatal(err)
		}
		results <- done
	}
	close(resume)
	var recorded, released int
	for range 3 {
		d := <-results
		if d.Final.State != spec.StateCompleted {
			t.Errorf("a Finish reports %s, want the recorded completed", d.Final.State)
		}
		if d.Recorded {
			recorded++
		}
		released += d.Released
	}
	if recorded != 1 || released != 2 {
		t.Errorf("recorded %d times, released %d items; want 1 record and 2 items (credentials, document)", recorded, released)
	}
	if got := stop()[task]; len(got) != 1 || got[0] != spec.StateCompleted {
		t.Errorf("announcements %v, want one: completed", got)
	}
	if rdb.Exists(ctx, "pdfexport:credentials:{"+task+"}").Val() != 0 {
		t.Error("the task's credentials outlived its Finish")
	}
	if _, err := (&sidestore.Store{RDB: rdb}).Get(ctx, "bystander", sidestore.Ref{HTML: env.Source.HTMLRef}); err != nil {
		t.Errorf("the other owner lost the document: %v", err)
	}
	if rec, ok, err := Recorded(ctx, rdb, task); err != nil || !ok || rec.State != spec.StateCompleted || rec.Result.Pages != 3 {
		t.Errorf("record %+v %v %v", rec, ok, err)
	}
}

// ownedEnvelope stores credentials and a document for task, as an enqueuer
// does, and returns the envelope naming them.
func ownedEnvelope(t *testing.T, rdb redis.UniversalClient, task, html string) *spec.Envelope {
	t.Helper()
	ctx := context.Background()
	cref, err := (&sidestore.Store{RDB: rdb}).PutCredentials(ctx, task, spec.Credentials{Headers: map[string]string{"Authorization": "Bearer " + task}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	href, err := (&sidestore.Store{RDB: rdb}).PutHTML(ctx, task, html, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &spec.Envelope{V: 1, ManualID: "m", Version: "1", Source: spec.EnvelopeSource{HTMLRef: &href, Credentials: &cref}}
}

// TestFinish_AForgedEnvelopeReleasesNothing: an envelope naming another
// task's credentials and document (its own Finish) leaves them to their
// owner.
func TestFinish_AForgedEnvelopeReleasesNothing(t *testing.T) {
	_, rdb, fin := setup(t)
	ctx := context.Background()
	victim := ownedEnvelope(t, rdb, "victim", "<p>victim's manual")
	done, err := fin.Finish(ctx, "default", victim, spec.Final{TaskID: "forger", State: spec.StateFailed})
	if err != nil || !done.Recorded || done.Released != 0 {
		t.Fatalf("forger's Finish = %+v, %v; want recorded, nothing released", done, err)
	}
	if _, err := (&sidestore.Store{RDB: rdb}).Get(ctx, "victim", sidestore.Ref{Credentials: victim.Source.Credentials}); err != nil {
		t.Errorf("the victim's credentials: %v", err)
	}
	if _, err := (&sidestore.Store{RDB: rdb}).Get(ctx, "victim", sidestore.Ref{HTML: victim.Source.HTMLRef}); err != nil {
		t.Errorf("the victim's document: %v", err)
	}
}

// TestFinish_DocumentLivesExactlyWhileAnUnfinishedExportOwnsIt drives random
// interleavings of enqueue, attempt (a retry reads the document), complete,
// fail, cancel and a duplicate Finish (a sweep, a cancel racing the end) of
// exports sharing one document, some of them concurrently, and checks after
// every step that the document exists exactly while some unfinished export
// owns it, and that every unfinished owner can still read it.
func TestFinish_DocumentLivesExactlyWhileAnUnfinishedExportOwnsIt(t *testing.T) {
	_, rdb, fin := setup(t)
	ctx := context.Background()
	const html = "<!doctype html><p>the shared manual"
	ref := sidestore.DocumentRef(html)
	key := "pdfexport:html:{" + ref.SHA256 + "}"
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	states := []string{spec.StateCompleted, spec.StateFailed, spec.StateCanceled}
	for round := range 40 {
		type export struct {
			id       string
			enqueued bool
			final    bool
		}
		exports := make([]*export, 2+rng.IntN(5))
		for i := range exports {
			exports[i] = &export{id: fmt.Sprintf("r%d-e%d", round, i)}
		}
		env := func(e *export) *spec.Envelope {
			return &spec.Envelope{V: 1, ManualID: "m", Version: "1", Source: spec.EnvelopeSource{HTMLRef: &ref}}
		}
		for step := range 30 {
			e := exports[rng.IntN(len(exports))]
			switch op := rng.IntN(5); {
			case !e.enqueued:
				if _, err := (&sidestore.Store{RDB: rdb}).PutHTML(ctx, e.id, html, time.Hour); err != nil {
					t.Fatal(err)
				}
				e.enqueued = true
			case op == 0: // an attempt (first run or a retry)
				_, err := (&sidestore.Store{RDB: rdb}).Get(ctx, e.id, sidestore.Ref{HTML: &ref})
				if e.final && err == nil {
					t.Fatalf("round %d step %d: %s read the document after it was final", round, step, e.id)
				}
				if !e.final && err != nil {
					t.Fatalf("round %d step %d: %s (unfinished) cannot read its document: %v", round, step, e.id, err)
				}
			case op == 1: // two ends racing (a cancel landing as it completes)
				var wg sync.WaitGroup
				for _, st := range []string{spec.StateCompleted, spec.StateCanceled} {
					wg.Go(func() {
						if _, err := fin.Finish(ctx, "default", env(e), spec.Final{TaskID: e.id, State: st}); err != nil {
							t.Error(err)
						}
					})
				}
				wg.Wait()
				e.final = true
			default: // one end, sometimes seen again (a sweep, a dashboard Run)
				if _, err := fin.Finish(ctx, "default", env(e), spec.Final{TaskID: e.id, State: states[rng.IntN(3)]}); err != nil {
					t.Fatal(err)
				}
				e.final = true
			}
			owned := false
			for _, x := range exports {
				owned = owned || x.enqueued && !x.final
			}
			if exists := rdb.Exists(ctx, key).Val() == 1; exists != owned {
				t.Fatalf("round %d step %d: document exists %v, an unfinished export owns it %v", round, step, exists, owned)
			}
		}
		// End the round: finish every export; nothing stays.
		for _, e := range exports {
			if _, err := fin.Finish(ctx, "default", env(e), spec.Final{TaskID: e.id, State: spec.StateCompleted}); err != nil {
				t.Fatal(err)
			}
		}
		if rdb.Exists(ctx, key).Val() != 0 {
			t.Fatalf("round %d: the document outlived every export", round)
		}
	}
}

// TestFinish_RefusesANonFinalState: the vocabulary is the final states.
func TestFinish_RefusesANonFinalState(t *testing.T) {
	_, _, fin := setup(t)
	_, err := fin.Finish(context.Background(), "default", nil, spec.Final{TaskID: "x", State: "retry"})
	if err == nil || !strings.Contains(err.Error(), "final state") {
		t.Fatalf("err %v", err)
	}
}

// TestFinish_ReleasesTheEncryptionPasswords: the passwords of
// options.encryption go with the export's one Finish, and only with the
// Finish of the task that stored them.
func TestFinish_ReleasesTheEncryptionPasswords(t *testing.T) {
	_, rdb, fin := setup(t)
	ctx := context.Background()
	store := &sidestore.Store{RDB: rdb}
	ref, err := store.PutPasswords(ctx, "owner-task", spec.Passwords{User: "u-secret", Owner: "o-secret"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	env := &spec.Envelope{V: 1, ManualID: "m", Version: "1", Source: spec.EnvelopeSource{HTML: "<p>x"},
		Options: spec.Options{Encryption: &spec.Encryption{Allow: []string{"print"}}}, EncryptionRef: &ref}
	if done, err := fin.Finish(ctx, "default", env, spec.Final{TaskID: "forger", State: spec.StateFailed}); err != nil || done.Released != 0 {
		t.Fatalf("forger's Finish = %+v, %v; want nothing released", done, err)
	}
	if _, err := store.Get(ctx, "owner-task", sidestore.Ref{Passwords: &ref}); err != nil {
		t.Fatalf("the owner lost its passwords to another task's Finish: %v", err)
	}
	done, err := fin.Finish(ctx, "default", env, spec.Final{TaskID: "owner-task", State: spec.StateCompleted})
	if err != nil || !done.Recorded || done.Released != 1 {
		t.Fatalf("owner's Finish = %+v, %v; want the passwords released", done, err)
	}
	if rdb.Exists(ctx, "pdfexport:passwords:{owner-task}").Val() != 0 {
		t.Fatal("the passwords outlived the export's Finish")
	}
}

// errDied stands for a process that dies at the hook's point.
var errDied = errors.New("the process died here")

// TestFinish_StepsAfterTheRecordAreReDriven: a Finish that recorded but did
// not complete its steps — its process died right after the record (a
// hook), or Redis refused the callback's enqueue (a client on a dead
// address: a real connection error) — leaves them to the sweep, which runs
// them RedriveAfter later: the callback task exists exactly once, with the
// recorded body, what the task owned is released once, the outcome is
// announced once, and nothing is left to re-drive. A late duplicate Finish
// leaves nothing for the sweep to do either.
func TestFinish_StepsAfterTheRecordAreReDriven(t *testing.T) {
	deadClient := asynq.NewClient(asynq.RedisClientOpt{Addr: "127.0.0.1:" + strconv.Itoa(testsupport.FreePort(t)), DialTimeout: time.Second})
	t.Cleanup(func() { _ = deadClient.Close() })
	for _, tc := range []struct {
		name  string
		fault func(fin *Finisher)
		// wantErr: the faulty Finish reports its failure.
		wantErr bool
	}{
		{"the process dies after the record", func(fin *Finisher) { fin.afterRecord = func(string) error { return errDied } }, true},
		{"Redis refuses the callback enqueue", func(fin *Finisher) { fin.Client = deadClient }, true},
		{"a late duplicate Finish", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, rdb, good := setup(t)
			ctx := context.Background()
			const task = "export-1"
			env := ownedEnvelope(t, rdb, task, "<p>a manual")
			env.Callback = &spec.Callback{URL: "https://hooks.example.com/pdf"}
			stop := announcements(t, rdb)
			faulty := *good
			if tc.fault != nil {
				tc.fault(&faulty)
			}
			f := spec.Final{TaskID: task, State: spec.StateCompleted, Result: &spec.Result{Pages: 2}}
			done, err := faulty.Finish(ctx, "default", env, f)
			if !done.Recorded || (err != nil) != tc.wantErr {
				t.Fatalf("Finish = %+v, %v; want recorded, error %v", done, err, tc.wantErr)
			}
			insp := asynq.NewInspectorFromRedisClient(rdb)
			if tc.wantErr {
				if _, err := insp.GetTaskInfo("default", CallbackTaskID(task)); !errors.Is(err, asynq.ErrTaskNotFound) && !errors.Is(err, asynq.ErrQueueNotFound) {
					t.Fatalf("the fault did not hit: callback task %v", err)
				}
			} else if _, err := good.Finish(ctx, "default", env, spec.Final{TaskID: task, State: spec.StateCanceled}); err != nil {
				t.Fatal(err)
			}
			sweep := &Sweeper{Finisher: good, Queues: []string{"default"}, RedriveAfter: time.Millisecond}
			time.Sleep(5 * time.Millisecond)
			for range 2 { // the second pass finds nothing left
				if _, err := sweep.Sweep(ctx); err != nil {
					t.Fatal(err)
				}
			}
			info, err := insp.GetTaskInfo("default", CallbackTaskID(task))
			if err != nil {
				t.Fatalf("no callback after the re-drive: %v", err)
			}
			var ct tasks.Callback
			var body spec.Final
			if json.Unmarshal(info.Payload, &ct) != nil || json.Unmarshal(ct.Body, &body) != nil || body.State != spec.StateCompleted || body.Result.Pages != 2 {
				t.Errorf("callback body %s, want the recorded completed", ct.Body)
			}
			if ct.Delivery != CallbackTaskID(task) {
				t.Errorf("webhook-id %q, want %q", ct.Delivery, CallbackTaskID(task))
			}
			if n := rdb.LLen(ctx, "asynq:{default}:pending").Val(); n != 1 {
				t.Errorf("%d pending tasks, want the one callback", n)
			}
			if got := stop()[task]; len(got) != 1 {
				t.Errorf("announcements %v, want one", got)
			}
			if rdb.Exists(ctx, "pdfexport:credentials:{"+task+"}", "pdfexport:html:{"+env.Source.HTMLRef.SHA256+"}").Val() != 0 {
				t.Error("what the task owned outlived the re-drive")
			}
			if n := rdb.ZCard(ctx, keyspace.FinishingIndex).Val(); n != 0 || rdb.Exists(ctx, keyspace.Finishing(task)).Val() != 0 {
				t.Errorf("%d entries left to re-drive, marker %d", n, rdb.Exists(ctx, keyspace.Finishing(task)).Val())
			}
		})
	}
}

// TestFinish_OnClusterWhateverTheTaskID: the record and its finishing
// marker are written by one script, so on Cluster they must hash to one
// slot whatever braces a task id carries (CROSSSLOT otherwise).
func TestFinish_OnClusterWhateverTheTaskID(t *testing.T) {
	if testing.Short() {
		t.Skip("Redis Cluster")
	}
	rdb := testsupport.StartRedisCluster(t).Client(t)
	fin := &Finisher{RDB: rdb, Client: asynq.NewClientFromRedisClient(rdb), CallbackMaxRetry: 1, Retention: time.Hour}
	ctx := context.Background()
	for _, id := range []string{"0b9d5a1e-uuid", "a{b}c", "{x}", "a{}b", "}{", "a{b"} {
		done, err := fin.Finish(ctx, "default", &spec.Envelope{V: 1, ManualID: "m", Version: "1"}, spec.Final{TaskID: id, State: spec.StateFailed})
		if err != nil || !done.Recorded {
			t.Errorf("task %q: %+v, %v", id, done, err)
		}
		if n := rdb.Exists(ctx, keyspace.Finishing(id)).Val(); n != 0 {
			t.Errorf("task %q: marker left after a complete Finish", id)
		}
	}
}

// TestSweep_DropsTheOwnersOfDeletedTasks reproduces the review's finding: a
// pending export of a large document deleted from the dashboard, then six
// more exports of it run to their end, held the hash with owners=1 (the
// deleted task, for ever) and six "r:" markers, its TTL renewed to 48 h by
// every Put. Now a release leaves no marker (no anonymous references to
// protect), and the sweep drops the owner asynq no longer has: the document
// goes. An owner whose task asynq still has stays, however old.
func TestSweep_DropsTheOwnersOfDeletedTasks(t *testing.T) {
	_, rdb, fin := setup(t)
	ctx := context.Background()
	html := "<!doctype html><p>" + strings.Repeat("a popular manual. ", 4<<10)
	ref := sidestore.DocumentRef(html)
	key := "pdfexport:html:{" + ref.SHA256 + "}"
	insp := asynq.NewInspectorFromRedisClient(rdb)
	enqueue := func(id string) *spec.Envelope {
		t.Helper()
		if _, err := (&sidestore.Store{RDB: rdb}).PutHTML(ctx, id, html, 0); err != nil {
			t.Fatal(err)
		}
		env := &spec.Envelope{V: 1, ManualID: "m", Version: "1", Source: spec.EnvelopeSource{HTMLRef: &ref}}
		payload, _ := json.Marshal(env)
		if _, err := fin.Client.Enqueue(tasks.NewExportTask(payload), asynq.TaskID(id)); err != nil {
			t.Fatal(err)
		}
		return env
	}
	enqueue("deleted")
	if err := insp.DeleteTask("default", "deleted"); err != nil { // the dashboard's "Delete"
		t.Fatal(err)
	}
	for i := range 6 {
		id := fmt.Sprintf("export-%d", i)
		env := enqueue(id)
		if _, err := fin.Finish(ctx, "default", env, spec.Final{TaskID: id, State: spec.StateCompleted}); err != nil {
			t.Fatal(err)
		}
	}
	fields := rdb.HKeys(ctx, key).Val()
	markers := 0
	for _, f := range fields {
		if strings.HasPrefix(f, "r:") {
			markers++
		}
	}
	t.Logf("after the exports: fields %v, owners %s, TTL %v", fields, rdb.HGet(ctx, key, "owners").Val(), rdb.TTL(ctx, key).Val())
	if markers != 0 {
		t.Errorf("%d release markers in the hash, want none (no anonymous references)", markers)
	}
	// A pending export of the same document, as old as the deleted one.
	enqueue("waiting")
	sweep := &Sweeper{Finisher: fin, Queues: []string{"default"}, DocumentsEvery: time.Nanosecond, OwnerGrace: time.Nanosecond}
	time.Sleep(5 * time.Millisecond)
	if _, err := sweep.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rdb.HKeys(ctx, key).Val(); len(got) != 3 || rdb.HGet(ctx, key, "owners").Val() != "1" || rdb.HExists(ctx, key, "o:waiting").Val() != true {
		t.Errorf("after the sweep: fields %v; want data, owners=1, o:waiting", got)
	}
	if _, err := (&sidestore.Store{RDB: rdb}).Get(ctx, "waiting", sidestore.Ref{HTML: &ref}); err != nil {
		t.Errorf("the waiting export lost its document: %v", err)
	}
	if err := insp.DeleteTask("default", "waiting"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if _, err := sweep.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if rdb.Exists(ctx, key).Val() != 0 {
		t.Errorf("the document outlived every owner asynq has: %v", rdb.HKeys(ctx, key).Val())
	}
	if _, err := sweep.Sweep(ctx); err != nil { // its index entry goes too
		t.Fatal(err)
	}
	if n := rdb.ZCard(ctx, "pdfexport:html-index").Val(); n != 0 {
		t.Errorf("%d documents left in the index", n)
	}
}

// roundTrips counts the commands and pipelines a client sends.
type roundTrips struct {
	mu    sync.Mutex
	names []string
}

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.mu.Lock()
		h.names = append(h.names, cmd.Name())
		h.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.mu.Lock()
		h.names = append(h.names, "pipeline")
		h.mu.Unlock()
		return next(ctx, cmds)
	}
}

func (h *roundTrips) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.names
	h.names = nil
	return n
}

// TestFinish_OneServerInTwoRoundTripsAndItsReleases: on one Redis server
// (no Cluster), a Finish indexes and records in one script, releases each
// item beside the task in one, and announces and clears in one: two round
// trips and one per item (warm scripts), where the steps one by one took
// five and one per item. What it leaves is
// what the steps one by one left: the record, the announcement, no marker,
// no index entry, the document released.
func TestFinish_OneServerInTwoRoundTripsAndItsReleases(t *testing.T) {
	_, rdb, fin := setup(t)
	ctx := context.Background()
	hook := &roundTrips{}
	rdb.AddHook(hook)
	seen := announcements(t, rdb)
	for i, task := range []string{"warm", "counted"} {
		env := ownedEnvelope(t, rdb, task, "<p>the manual")
		hook.take()
		done, err := fin.Finish(ctx, "default", env, spec.Final{TaskID: task, State: spec.StateCompleted})
		if err != nil || !done.Recorded || done.Released == 0 {
			t.Fatalf("Finish(%s) = %+v, %v; want recorded and released", task, done, err)
		}
		trips := hook.take()
		if want := 2 + len(sidestore.Refs(env)); i == 1 && len(trips) != want {
			t.Errorf("Finish took %d round trips %v, want %d", len(trips), trips, want)
		}
		for _, key := range []string{keyspace.Finishing(task)} {
			if n, err := rdb.Exists(ctx, key).Result(); err != nil || n != 0 {
				t.Errorf("%s left behind: %d, %v", key, n, err)
			}
		}
		if _, err := rdb.ZScore(ctx, keyspace.FinishingIndex, task).Result(); !errors.Is(err, redis.Nil) {
			t.Errorf("index entry of %s left behind: %v", task, err)
		}
		if rec, ok, err := fin.Recorded(ctx, task); err != nil || !ok || rec.State != spec.StateCompleted {
			t.Errorf("record of %s = %+v, %v, %v", task, rec, ok, err)
		}
		if _, err := (&sidestore.Store{RDB: rdb}).Get(ctx, task, sidestore.Ref{HTML: env.Source.HTMLRef}); err == nil {
			t.Errorf("the document of %s is still readable by it after its Finish", task)
		}
	}
	got := seen()
	for _, task := range []string{"warm", "counted"} {
		if len(got[task]) != 1 {
			t.Errorf("announcements of %s = %v, want one", task, got[task])
		}
	}
}
