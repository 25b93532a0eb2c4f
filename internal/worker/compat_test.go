package worker

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/queue/fleet"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/tasks"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestWorker_NewerEnvelopeFailsForGoodAndSaysSo: an envelope of a newer
// version than the worker serves (queued by a later release's enqueuer)
// fails for good at its first attempt, its record and callback naming the
// version it needs and the field this worker does not know; nothing is
// stored. The worker announces the versions it serves while it runs and
// withdraws the announcement when it stops.
func TestWorker_NewerEnvelopeFailsForGoodAndSaysSo(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartRedis(t)
	hooks := newHookReceiver(t, nil)
	hookHost := strings.TrimPrefix(hooks.srv.URL, "http://")
	store := t.TempDir()
	cfg := loadConfig(t, "REDIS_URL="+srv.URL(), "STORAGE_URL=file://"+store, "ADMIN_ADDR=", "TASK_CHECK_INTERVAL=50ms",
		"CALLBACK_ALLOWED_HOSTS="+hookHost, "CALLBACK_SECRET="+callbackSecret)
	w := startWorker(t, cfg, Options{Renderer: stubRenderer{pdf: stubPDF}})
	rdb := srv.Client()
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()

	announced := keyspace.Worker(fleet.Hostname(), os.Getpid())
	var a fleet.Announcement
	if b, err := rdb.Get(ctx, announced).Bytes(); err != nil || json.Unmarshal(b, &a) != nil || a.Envelope != spec.EnvelopeVersion || a.PID != os.Getpid() {
		t.Fatalf("announcement %s: %+v (%v), want envelope version %d", announced, a, err, spec.EnvelopeVersion)
	}

	newer := strconv.Itoa(spec.EnvelopeVersion + 1)
	for _, tc := range []struct {
		name, payload string
		parts         []string
	}{
		{"a field this worker does not know", `{"v":` + newer + `,"manual_id":"m","version":"1","source":{"html":"<p>x</p>"},"options":{"hyphenate":true},"callback":{"url":"` + hooks.srv.URL + `/h"}}`,
			[]string{"hyphenate: unknown field", "envelope version " + newer + " needs a worker", "serves versions 1 to " + strconv.Itoa(spec.EnvelopeVersion)}},
		{"known fields, a newer meaning", `{"v":` + newer + `,"manual_id":"m","version":"2","source":{"html":"<p>x</p>"},"callback":{"url":"` + hooks.srv.URL + `/h"}}`,
			[]string{"v: envelope version " + newer + " needs a worker"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := uuid.NewString()
			q := asynq.NewClientFromRedisClient(rdb)
			if _, err := q.Enqueue(tasks.NewExportTask([]byte(tc.payload)), asynq.TaskID(id), asynq.MaxRetry(3)); err != nil {
				t.Fatal(err)
			}
			var got delivery
			testsupport.Eventually(t, 20*time.Second, func() error {
				for _, d := range hooks.deliveries() {
					if d.final.TaskID == id {
						got = d
						return nil
					}
				}
				return testsupport.Unless(false, "no callback for %s yet", id)
			})
			if got.err != nil || got.final.State != spec.StateFailed || got.final.Retried != 0 || got.final.ManualID != "m" {
				t.Fatalf("callback %+v (signature: %v), want failed at the first attempt", got.final, got.err)
			}
			for _, p := range tc.parts {
				if !strings.Contains(got.final.Error, p) {
					t.Errorf("error %q does not say %q", got.final.Error, p)
				}
			}
		})
	}
	if entries, _ := os.ReadDir(filepath.Join(store, "m")); len(entries) != 0 {
		t.Errorf("%d files stored for the refused exports", len(entries))
	}

	w.Shutdown()
	if err := rdb.Get(ctx, announced).Err(); err != redis.Nil {
		t.Errorf("after Shutdown, GET %s: %v, want the announcement gone", announced, err)
	}
}
