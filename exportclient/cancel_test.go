package exportclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/tasks"
	"github.com/pdfexport/pdfexport/internal/tasks/outcome"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestWait_WakesOnTheAnnouncement: with a poll interval of a minute, Wait
// returns as soon as the outcome is announced, with the announced result.
func TestWait_WakesOnTheAnnouncement(t *testing.T) {
	c, _ := newTestClient(t)
	ctx := context.Background()
	job, err := c.Enqueue(ctx, Request{ManualID: "m", Version: "1", HTML: "<p>x"})
	if err != nil {
		t.Fatal(err)
	}
	announced := make(chan time.Time, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		announced <- time.Now()
		_, _ = c.finisher.Finish(ctx, "default", nil,
			spec.Final{TaskID: job.TaskID, State: spec.StateCompleted, Result: &spec.Result{ArtifactKey: "m/1/k.pdf", Pages: 7}})
	}()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := c.Wait(wctx, job.TaskID, time.Minute)
	woke := time.Now()
	if err != nil || st.State != StateCompleted || st.Result == nil || st.Result.Pages != 7 || st.Queue != "default" {
		t.Fatalf("Wait = %+v, %v", st, err)
	}
	if d := woke.Sub(<-announced); d > 2*time.Second {
		t.Fatalf("Wait returned %s after the announcement: it polled instead of waking", d)
	}
}

// TestCancel_ExportNoWorkerTook: a pending export with a callback and a
// document stored beside it is canceled at once: its status says canceled,
// its callback (state canceled) is enqueued, its document reference is
// given back, a waiter wakes; canceling again is ErrFinal, an unknown id
// ErrNotFound.
func TestCancel_ExportNoWorkerTook(t *testing.T) {
	srv := testsupport.StartRedis(t)
	c, err := New(Config{Redis: asynq.RedisClientOpt{Addr: srv.Addr()}, CallbackAllowedHosts: "hooks.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	html := "<p>" + strings.Repeat("a large document ", 4<<10)
	job, err := c.Enqueue(ctx, Request{ManualID: "m", Version: "1", HTML: html, CallbackURL: "https://hooks.example.com/pdf"})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(html))
	docKey := "pdfexport:html:{" + hex.EncodeToString(sum[:]) + "}"
	if n, _ := srv.Client().Exists(ctx, docKey).Result(); n != 1 {
		t.Fatalf("the document was not stored beside the task (%s)", docKey)
	}
	waited := make(chan Status, 1)
	go func() {
		st, _ := c.Wait(ctx, job.TaskID, time.Minute)
		waited <- st
	}()
	time.Sleep(200 * time.Millisecond) // the waiter is subscribed

	st, err := c.Cancel(ctx, job.TaskID)
	if err != nil || st.State != StateCanceled {
		t.Fatalf("Cancel = %+v, %v", st, err)
	}
	select {
	case w := <-waited:
		if w.State != StateCanceled {
			t.Errorf("the waiter woke with %s", w.State)
		}
	case <-time.After(5 * time.Second):
		t.Error("the waiter did not wake")
	}
	if st, err := c.Status(ctx, job.TaskID); err != nil || st.State != StateCanceled || !strings.Contains(st.Error, "canceled") {
		t.Errorf("Status = %+v, %v", st, err)
	}
	if n, _ := srv.Client().Exists(ctx, docKey).Result(); n != 0 {
		t.Error("the document stored beside the canceled task is still there")
	}
	info, err := c.inspector.GetTaskInfo("default", outcome.CallbackTaskID(job.TaskID))
	if err != nil {
		t.Fatalf("no callback task: %v", err)
	}
	var ct tasks.Callback
	var f spec.Final
	if err := json.Unmarshal(info.Payload, &ct); err != nil || json.Unmarshal(ct.Body, &f) != nil {
		t.Fatalf("callback payload %s: %v", info.Payload, err)
	}
	if info.Type != tasks.TypeCallback || ct.URL != "https://hooks.example.com/pdf" || ct.Delivery != info.ID ||
		f.TaskID != job.TaskID || f.State != spec.StateCanceled || f.ManualID != "m" {
		t.Errorf("callback task %s %+v, body %+v", info.Type, ct, f)
	}

	if _, err := c.Cancel(ctx, job.TaskID); !errors.Is(err, ErrFinal) {
		t.Errorf("second Cancel: %v, want ErrFinal", err)
	}
	if _, err := c.Cancel(ctx, "no-such-task"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Cancel of an unknown id: %v, want ErrNotFound", err)
	}
}

// TestWait_SeesAnOutcomeAnnouncedBeforeItSubscribed: the worker announces
// before asynq records the final state; a Wait that subscribes in between
// reads the recorded outcome instead of sleeping until its next poll.
func TestWait_SeesAnOutcomeAnnouncedBeforeItSubscribed(t *testing.T) {
	c, _ := newTestClient(t)
	ctx := context.Background()
	job, err := c.Enqueue(ctx, Request{ManualID: "m", Version: "1", HTML: "<p>x"})
	if err != nil {
		t.Fatal(err)
	}
	// Announced with nobody listening; asynq still says pending.
	if _, err := c.finisher.Finish(ctx, "default", nil,
		spec.Final{TaskID: job.TaskID, State: spec.StateCompleted, Result: &spec.Result{Pages: 4}}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	st, err := c.Wait(wctx, job.TaskID, time.Minute)
	if err != nil || st.State != StateCompleted || st.Result == nil || st.Result.Pages != 4 {
		t.Fatalf("Wait = %+v, %v after %s", st, err, time.Since(start))
	}
}
