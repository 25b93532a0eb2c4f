package exportclient

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// TestForClient_RecordedInTheEnvelope: ForClient writes the client into the
// envelope (which a worker decodes), Status reads it back; without it the
// envelope has no client field at all, so earlier workers read it; a name
// that is not an identifier is refused naming the field, before Redis.
func TestForClient_RecordedInTheEnvelope(t *testing.T) {
	c, redis := newTestClient(t)
	ctx := context.Background()
	insp := asynq.NewInspectorFromRedisClient(redis.Client())
	for _, tc := range []struct{ name, client string }{{"a client", "portal"}, {"no client", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			job, err := c.Enqueue(ctx, Request{ManualID: "m", Version: "1", HTML: "<p>x"}, ForClient(tc.client))
			if err != nil {
				t.Fatal(err)
			}
			st, err := c.Status(ctx, job.TaskID)
			if err != nil || st.Client != tc.client {
				t.Fatalf("Status: client %q %v, want %q", st.Client, err, tc.client)
			}
			info, err := insp.GetTaskInfo(job.Queue, job.TaskID)
			if err != nil {
				t.Fatal(err)
			}
			env, err := spec.DecodeEnvelope(info.Payload)
			if err != nil || env.Client != tc.client {
				t.Fatalf("envelope: client %q %v", env.Client, err)
			}
			if tc.client == "" && strings.Contains(string(info.Payload), `"client"`) {
				t.Errorf("an envelope without a client names the field: %s", info.Payload)
			}
		})
	}
	_, err := c.Enqueue(ctx, Request{ManualID: "m", Version: "1", HTML: "<p>x"}, ForClient("two words"))
	if !errors.Is(err, ErrInvalid) || firstField(err) != "client" {
		t.Errorf("a bad client name: %v, want a FieldError on client", err)
	}
}
