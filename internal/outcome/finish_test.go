package outcome

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/credstore"
	"github.com/pdfexport/pdfexport/internal/htmlstore"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// announcements counts the outcomes announced for each task until stop.
func announcements(t *testing.T, rdb redis.UniversalClient) (stop func() map[string][]string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ps := rdb.SSubscribe(ctx, Channel)
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
	if _, err := htmlstore.Put(ctx, rdb, "bystander", "<p>shared", time.Hour); err != nil {
		t.Fatal(err)
	}
	stop := announcements(t, rdb)
	held, resume := make(chan struct{}), make(chan struct{})
	fin.afterRecord = func(string) { close(held); <-resume }

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
	if _, err := htmlstore.Get(ctx, rdb, "bystander", *env.Source.HTMLRef); err != nil {
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
	cref, err := (&credstore.Store{RDB: rdb}).Put(ctx, task, spec.Credentials{Headers: map[string]string{"Authorization": "Bearer " + task}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	href, err := htmlstore.Put(ctx, rdb, task, html, time.Hour)
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
	if _, err := (&credstore.Store{RDB: rdb}).Get(ctx, "victim", *victim.Source.Credentials); err != nil {
		t.Errorf("the victim's credentials: %v", err)
	}
	if _, err := htmlstore.Get(ctx, rdb, "victim", *victim.Source.HTMLRef); err != nil {
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
	ref := htmlstore.Ref(html)
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
				if _, err := htmlstore.Put(ctx, rdb, e.id, html, time.Hour); err != nil {
					t.Fatal(err)
				}
				e.enqueued = true
			case op == 0: // an attempt (first run or a retry)
				_, err := htmlstore.Get(ctx, rdb, e.id, ref)
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
	store := &credstore.Store{RDB: rdb}
	ref, err := store.PutPasswords(ctx, "owner-task", spec.Passwords{User: "u-secret", Owner: "o-secret"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	env := &spec.Envelope{V: 1, ManualID: "m", Version: "1", Source: spec.EnvelopeSource{HTML: "<p>x"},
		Options: spec.Options{Encryption: &spec.Encryption{Allow: []string{"print"}}}, EncryptionRef: &ref}
	if done, err := fin.Finish(ctx, "default", env, spec.Final{TaskID: "forger", State: spec.StateFailed}); err != nil || done.Released != 0 {
		t.Fatalf("forger's Finish = %+v, %v; want nothing released", done, err)
	}
	if _, err := store.GetPasswords(ctx, "owner-task", ref); err != nil {
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
