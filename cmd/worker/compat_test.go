package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/queue/fleet"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/tasks"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// exitUnavailableForTest is bin/enqueue's exit code for an export refused
// because older workers serve its queue (cmd/enqueue's exitUnavailable).
const exitUnavailableForTest = 3

// TestCompat_PreviousRelease runs the previous release's binaries
// (testsupport.PreviousRelease, built from the git history) beside this
// build's on one Redis, as docs/COMPATIBILITY.md promises:
//
//   - the previous worker serves what this build's enqueuer writes for it
//     (envelope version 1) and the export completes;
//   - an envelope of the first version the previous worker does not serve
//     (the one after the newest it announces) is refused by this build's
//     enqueuer before anything is written, naming the previous worker and
//     its version; with OLDER_WORKERS=allow it is written, and the previous
//     worker fails it for good, naming the versions it serves, storing
//     nothing;
//   - a field the previous worker does not know fails for good there, naming
//     the field (its strict decoding: the backstop when no gate ran);
//
// then, the previous worker stopped and this build's started:
//
//   - the previous release's enqueuer is served;
//   - version 2 passes the gate (this worker announces it) and completes;
//   - an envelope of a version newer than this build fails for good naming
//     the version it needs and the field it does not know; nothing stored.
func TestCompat_PreviousRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the previous release's binaries")
	}
	release := testsupport.PreviousRelease(t)
	prev := testsupport.PreviousBinaries(t, release.Commit)
	cur := testsupport.Binaries(t)
	srv := testsupport.StartRedis(t)
	dir := t.TempDir()
	htmlFile := filepath.Join(dir, "manual.html")
	if err := os.WriteFile(htmlFile, []byte(`<!doctype html><h1>One</h1><h1 style="break-before:page">Two</h1>`), 0o644); err != nil {
		t.Fatal(err)
	}
	// Large enough to travel by reference (sidestore.HTMLThreshold), two
	// pages like htmlFile.
	bigHTML := filepath.Join(dir, "big.html")
	if err := os.WriteFile(bigHTML, []byte(`<!doctype html><h1>One</h1><!--`+strings.Repeat("padding ", 8<<10)+`--><h1 style="break-before:page">Two</h1>`), 0o644); err != nil {
		t.Fatal(err)
	}
	artifacts := filepath.Join(dir, "artifacts")
	environ := append(os.Environ(), "REDIS_URL="+srv.URL(), "STORAGE_URL=file://"+artifacts,
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "LOG_FORMAT=text", "TASK_CHECK_INTERVAL=100ms")
	client, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	queue := asynq.NewClient(asynq.RedisClientOpt{Addr: srv.Addr()})
	t.Cleanup(func() { _ = queue.Close() })

	// enqueue runs bin/enqueue of bin with args and returns its exit code,
	// stdout and stderr.
	enqueue := func(bin string, extraEnv []string, args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, "enqueue"), append([]string{"export", "--html-file", htmlFile}, args...)...)
		cmd.Env = append(append([]string{}, environ...), extraEnv...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("enqueue: %v", err)
			}
			code = ee.ExitCode()
		}
		return code, stdout.String(), stderr.String()
	}
	completes := func(bin string, args ...string) {
		t.Helper()
		code, out, stderr := enqueue(bin, nil, append(args, "--wait=60s", "--json")...)
		if code != 0 {
			t.Fatalf("%s/enqueue %v: exit %d\n%s", bin, args, code, stderr)
		}
		var r spec.Result
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.Pages != 2 || !strings.HasPrefix(r.URL, "file://") {
			t.Fatalf("result %q (%v): want 2 pages stored", out, err)
		}
		if _, err := os.Stat(strings.TrimPrefix(r.URL, "file://")); err != nil {
			t.Fatalf("the stored PDF: %v", err)
		}
	}
	// raw queues an envelope as an enqueuer of another version would,
	// and returns the export's final status.
	raw := func(payload string) exportclient.Status {
		t.Helper()
		id := uuid.NewString()
		if _, err := queue.Enqueue(tasks.NewExportTask([]byte(payload)), asynq.TaskID(id), asynq.Queue("default"),
			asynq.MaxRetry(3), asynq.Retention(time.Hour)); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		st, err := client.Wait(ctx, id, 200*time.Millisecond)
		if err != nil {
			t.Fatalf("waiting for %s: %v", id, err)
		}
		return st
	}
	noArtifact := func(version string) {
		t.Helper()
		if entries, err := os.ReadDir(filepath.Join(artifacts, "compat", version)); err == nil && len(entries) > 0 {
			t.Errorf("manual compat version %s: %d files stored, want none", version, len(entries))
		}
	}
	failsForGood := func(st exportclient.Status, parts ...string) {
		t.Helper()
		if st.State != exportclient.StateFailed || st.Retried != 0 {
			t.Fatalf("state %s after %d retries (%s), want failed for good at once", st.State, st.Retried, st.Error)
		}
		for _, p := range parts {
			if !strings.Contains(st.Error, p) {
				t.Errorf("error %q does not say %q", st.Error, p)
			}
		}
	}

	// besideCompletes: an export whose document and passwords bin's
	// enqueuer stores beside the task completes, its envelope names them by
	// reference, and the worker's Finish releases both.
	besideCompletes := func(bin, version string) {
		t.Helper()
		completes(bin, "--manual", "compat", "--version", version, "--html-file", bigHTML, "--owner-password", "compat-owner-pw")
		rdb := srv.Client()
		ctx := context.Background()
		byRef := 0
		ids, _ := rdb.Keys(ctx, "asynq:{default}:t:*").Result()
		for _, id := range ids {
			p := rdb.HGet(ctx, id, "msg").Val()
			if strings.Contains(p, `"version":"`+version+`"`) && strings.Contains(p, `"html_ref"`) && strings.Contains(p, `"encryption_ref"`) {
				byRef++
			}
		}
		if byRef != 1 {
			t.Errorf("version %s: %d tasks name a document and passwords by reference, want 1", version, byRef)
		}
		testsupport.Eventually(t, 30*time.Second, func() error {
			for _, pattern := range []string{"pdfexport:html:{*", "pdfexport:passwords:*"} {
				if keys, err := rdb.Keys(ctx, pattern).Result(); err != nil || len(keys) != 0 {
					return fmt.Errorf("%s: %v (%v), want released", pattern, keys, err)
				}
			}
			return nil
		})
	}

	old := startWorker(t, prev, environ)
	t.Run("previous worker, this enqueuer", func(t *testing.T) {
		completes(cur, "--manual", "compat", "--version", "1")

		served := announced(t, srv.Client(), old.PID())
		if served.Envelope >= spec.EnvelopeVersion {
			t.Fatalf("the previous release %s serves envelope version %d, as new as this build's %d: nothing to refuse", release.Version, served.Envelope, spec.EnvelopeVersion)
		}
		need := strconv.Itoa(served.Envelope + 1)
		code, _, stderr := enqueue(cur, nil, "--manual", "compat", "--version", "2", "--envelope-version", need)
		if code != exitUnavailableForTest {
			t.Errorf("version %s with the previous worker serving: exit %d, want %d\n%s", need, code, exitUnavailableForTest, stderr)
		}
		for _, p := range []string{"pid " + strconv.Itoa(old.PID()), served.Version, "envelope version " + need, "OLDER_WORKERS"} {
			if !strings.Contains(stderr, p) {
				t.Errorf("the refusal %q does not name %q", stderr, p)
			}
		}
		if n, _ := srv.Client().Keys(context.Background(), "asynq:{default}:t:*").Result(); len(n) != 1 {
			t.Errorf("%d tasks queued, want only the first export's", len(n))
		}

		code, _, stderr = enqueue(cur, []string{"OLDER_WORKERS=allow"}, "--manual", "compat", "--version", "2", "--envelope-version", need, "--wait=60s")
		refusal := fmt.Sprintf("envelope version %s needs a worker that serves it; this worker serves versions %d to %d", need, spec.MinEnvelopeVersion, served.Envelope)
		if code != 1 || !strings.Contains(stderr, refusal) {
			t.Errorf("version %s allowed onto the previous worker: exit %d, want 1 with %q\n%s", need, code, refusal, stderr)
		}
		noArtifact("2")

		st := raw(`{"v":1,"manual_id":"compat","version":"3","source":{"html":"<p>x</p>"},"options":{"hyphenate":true}}`)
		failsForGood(st, "hyphenate: unknown field")
		noArtifact("3")

		// A site is envelope version 3: the previous worker refuses it for
		// good before reading anything, by its version or its field.
		st = raw(`{"v":3,"manual_id":"compat","version":"3s","source":{"site":{"url":"http://127.0.0.1:9/"}}}`)
		failsForGood(st)
		if !strings.Contains(st.Error, "got 3") && !strings.Contains(st.Error, "site") {
			t.Errorf("a site envelope on the previous worker: %q, want a refusal naming its version or source.site", st.Error)
		}
		noArtifact("3s")

		besideCompletes(cur, "3b")
	})
	old.stop(t)

	startWorker(t, cur, environ)
	t.Run("this worker, previous enqueuer", func(t *testing.T) {
		completes(prev, "--manual", "compat", "--version", "4")
		besideCompletes(prev, "4b")
		completes(cur, "--manual", "compat", "--version", "5", "--envelope-version", "2")

		v := strconv.Itoa(spec.EnvelopeVersion + 1)
		st := raw(`{"v":` + v + `,"manual_id":"compat","version":"6","source":{"html":"<p>x</p>"},"options":{"hyphenate":true}}`)
		failsForGood(st, "hyphenate: unknown field", "envelope version "+v+" needs a worker that serves it", "serves versions 1 to "+strconv.Itoa(spec.EnvelopeVersion))
		noArtifact("6")
	})
}

// announced is the announcement of the worker process pid (fleet), once it
// has made one.
func announced(t *testing.T, rdb redis.UniversalClient, pid int) fleet.Announcement {
	t.Helper()
	var a fleet.Announcement
	testsupport.Eventually(t, 30*time.Second, func() error {
		b, err := rdb.Get(context.Background(), keyspace.Worker(fleet.Hostname(), pid)).Bytes()
		if err != nil {
			return fmt.Errorf("worker pid %d announced nothing: %w", pid, err)
		}
		return json.Unmarshal(b, &a)
	})
	return a
}
