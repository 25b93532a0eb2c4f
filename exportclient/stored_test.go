package exportclient

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
)

// TestCompleteStored: an export completed from storage costs one SET with
// the client's retention; Status, Wait, Artifact and Cancel answer for its
// id; requests a worker would not simply reuse are refused.
func TestCompleteStored(t *testing.T) {
	c, srv := newTestClient(t)
	ctx := context.Background()
	p := Request{ManualID: "m", Version: "1", HTML: "<p>x"}.Payload()
	res := Result{ArtifactKey: "prefix/" + p.ArtifactKey(), Pages: 2, Bytes: 10, ETag: "e"}
	before := commandCalls(t, srv)
	job, err := c.CompleteStored(ctx, p, res, Queue("critical"), ForClient("portal"))
	if err != nil {
		t.Fatal(err)
	}
	after := commandCalls(t, srv)
	if after["set"]-before["set"] != 1 {
		t.Errorf("SETs: %d, want 1", after["set"]-before["set"])
	}
	if !strings.HasPrefix(job.TaskID, StoredPrefix) || job.ArtifactKey != p.ArtifactKey() || job.Queue != "critical" {
		t.Errorf("enqueued: %+v", job)
	}
	if ttl := srv.Client().TTL(ctx, keyspace.Stored(job.TaskID)).Val(); ttl <= 23*time.Hour || ttl > 24*time.Hour {
		t.Errorf("TTL %s, want the 24h retention", ttl)
	}
	st, err := c.Status(ctx, job.TaskID)
	if err != nil || st.State != StateCompleted || st.Result == nil || st.Result.Pages != 2 || st.Client != "portal" || st.Queue != "critical" {
		t.Errorf("status: %+v %v", st, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if st, err := c.Wait(wctx, job.TaskID, time.Second); err != nil || st.State != StateCompleted {
		t.Errorf("wait: %+v %v", st, err)
	}
	if _, key, err := c.Artifact(ctx, job.TaskID); err != nil || key != p.ArtifactKey() {
		t.Errorf("artifact: %q %v", key, err)
	}
	if _, err := c.Cancel(ctx, job.TaskID); !errors.Is(err, ErrFinal) {
		t.Errorf("cancel: %v, want ErrFinal", err)
	}
	if _, err := c.Status(ctx, StoredPrefix+"0000"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown stored id: %v", err)
	}
	for name, q := range map[string]Payload{
		"force":       Request{ManualID: "m", Version: "1", HTML: "<p>x", Force: true}.Payload(),
		"credentials": Request{ManualID: "m", Version: "1", URL: "https://docs.example.com/", Headers: map[string]string{"Authorization": "x"}}.Payload(),
	} {
		if _, err := c.CompleteStored(ctx, q, res); !errors.Is(err, ErrNotReusable) && !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrNotReusable", name, err)
		}
	}
	if _, err := c.CompleteStored(ctx, Request{ManualID: "m", Version: "2", HTML: "<p>x"}.Payload(), res); err == nil {
		t.Error("a result of another key accepted")
	}
	id := NewStoredID()
	if job, err := c.CompleteStored(ctx, p, res, TaskID(id)); err != nil || job.TaskID != id {
		t.Errorf("TaskID(NewStoredID()): %+v %v", job, err)
	}
	if _, err := c.CompleteStored(ctx, p, res, TaskID("link-x")); !errors.Is(err, ErrInvalid) {
		t.Errorf("TaskID without the stored- prefix: %v", err)
	}
}

// TestTaskID_SharesOneTask: enqueues with the same TaskID make one task;
// the second answers ErrTaskExists naming it.
func TestTaskID_SharesOneTask(t *testing.T) {
	c, _ := newTestClient(t)
	ctx := context.Background()
	r := Request{ManualID: "m", Version: "1", HTML: "<p>x"}
	first, err := c.Enqueue(ctx, r, TaskID("link-abc"))
	if err != nil || first.TaskID != "link-abc" {
		t.Fatalf("%+v %v", first, err)
	}
	second, err := c.Enqueue(ctx, r, TaskID("link-abc"))
	if !errors.Is(err, ErrTaskExists) || second.TaskID != "link-abc" {
		t.Fatalf("second: %+v %v, want ErrTaskExists", second, err)
	}
	if _, err := c.Enqueue(ctx, r, TaskID(StoredPrefix+"x")); !errors.Is(err, ErrInvalid) {
		t.Errorf("a stored- id: %v", err)
	}
}
