package exportclient_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestEnqueue_EncryptionPasswordsBesideTheTask: the passwords of
// options.encryption are stored beside the task, owned by its id; the
// queued envelope names them by reference only; a cancel (a Finish)
// deletes them, and then no Redis value holds them.
func TestEnqueue_EncryptionPasswordsBesideTheTask(t *testing.T) {
	srv := testsupport.StartRedis(t)
	c, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	const user, owner = "user-pw-8d1f", "owner-pw-33a0"
	req := exportclient.Request{ManualID: "m", Version: "1", HTML: "<p>secret manual",
		Options: exportclient.Options{
			Metadata:   &exportclient.Metadata{Title: "T", Keywords: []string{"a"}},
			Watermark:  &exportclient.Watermark{Text: "DRAFT"},
			Encryption: &exportclient.Encryption{UserPassword: user, OwnerPassword: owner, Allow: []string{"print"}}}}
	job, err := c.Enqueue(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	info, err := asynq.NewInspector(asynq.RedisClientOpt{Addr: srv.Addr()}).GetTaskInfo("default", job.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(info.Payload), user) || strings.Contains(string(info.Payload), owner) {
		t.Fatalf("the queued envelope holds a password: %s", info.Payload)
	}
	env, err := spec.DecodeEnvelope(info.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if env.EncryptionRef == nil || env.EncryptionRef.ID != job.TaskID || env.Options.Encryption == nil || env.Options.Encryption.Allow[0] != "print" {
		t.Fatalf("envelope %s: want encryption_ref owned by %s and the permissions", info.Payload, job.TaskID)
	}
	if job.ArtifactKey != env.ArtifactKey() {
		t.Fatalf("enqueued key %s, envelope's %s", job.ArtifactKey, env.ArtifactKey())
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	if got := rdb.HGet(ctx, "pdfexport:passwords:{"+job.TaskID+"}", "owner").Val(); got != job.TaskID {
		t.Fatalf("passwords' owner = %q, want the task id", got)
	}
	if _, err := c.Cancel(ctx, job.TaskID); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, "pdfexport:passwords:{"+job.TaskID+"}").Val(); n != 0 {
		t.Fatal("the passwords outlived the export's cancel")
	}
	testsupport.AssertRedisHoldsNo(t, rdb, user, owner)
}
