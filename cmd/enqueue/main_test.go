package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/tasks"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

type cliResult struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, environ []string, args ...string) cliResult {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, environ, strings.NewReader(""), &stdout, &stderr)
	return cliResult{code, stdout.String(), stderr.String()}
}

func TestExport_ExitCodes(t *testing.T) {
	srv := testsupport.StartRedis(t)
	htmlFile := filepath.Join(t.TempDir(), "m.html")
	if err := os.WriteFile(htmlFile, []byte("<!doctype html><h1>Manual</h1>"), 0o644); err != nil {
		t.Fatal(err)
	}
	up := []string{"REDIS_URL=" + srv.URL(), "ALLOWED_HOSTS=docs.example.com"}
	down := []string{"REDIS_URL=redis://127.0.0.1:" + strconv.Itoa(testsupport.FreePort(t)) + "/0"}
	tests := []struct {
		name     string
		environ  []string
		args     []string
		wantCode int
		wantErr  string // in stderr
	}{
		{"missing manual", up, []string{"export", "--version", "1", "--html-file", htmlFile}, exitInvalid, "manual_id: required"},
		{"traversal in version", up, []string{"export", "--manual", "m", "--version", "../x", "--html-file", htmlFile}, exitInvalid, "version: must match"},
		{"no source", up, []string{"export", "--manual", "m", "--version", "1"}, exitInvalid, "source: one of"},
		{"host not allowed", up, []string{"export", "--manual", "m", "--version", "1", "--url", "https://evil.example.net/"}, exitInvalid, "source.url"},
		{"metadata address", up, []string{"export", "--manual", "m", "--version", "1", "--url", "http://169.254.169.254/"}, exitInvalid, "source.url"},
		{"queue no worker serves", up, []string{"export", "--manual", "m", "--version", "1", "--html-file", htmlFile, "--queue", "anything"}, exitInvalid, "queue: \"anything\" is not a queue the workers serve"},
		{"queue outside QUEUES", append(up, "QUEUES=reports=1"), []string{"export", "--manual", "m", "--version", "1", "--html-file", htmlFile, "--queue", "reports"}, exitOK, ""},
		{"bad paper", up, []string{"export", "--manual", "m", "--version", "1", "--html-file", htmlFile, "--paper", "B7"}, exitInvalid, "options.paper"},
		{"bad scale flag", up, []string{"export", "--manual", "m", "--version", "1", "--html-file", htmlFile, "--scale", "big"}, exitInvalid, "--scale"},
		{"missing html file", up, []string{"export", "--manual", "m", "--version", "1", "--html-file", "/nonexistent.html"}, exitInvalid, "--html-file"},
		{"bad config", []string{"REDIS_URL=http://x"}, []string{"export", "--manual", "m", "--version", "1", "--html-file", htmlFile}, exitInvalid, "REDIS_URL"},
		{"redis unreachable", down, []string{"export", "--manual", "m", "--version", "1", "--html-file", htmlFile}, exitUnavailable, "unavailable"},
		{"status unknown task", up, []string{"status", "no-such-task"}, exitInvalid, "not found"},
		{"status unreachable", down, []string{"status", "x"}, exitUnavailable, "unavailable"},
		{"cancel unknown task", up, []string{"cancel", "no-such-task"}, exitInvalid, "not found"},
		{"cancel without a task id", up, []string{"cancel"}, exitInvalid, "want exactly one TASK_ID"},
		{"cancel unreachable", down, []string{"cancel", "x"}, exitUnavailable, "unavailable"},
		{"callback not allowed", up, []string{"export", "--manual", "m", "--version", "1", "--html-file", htmlFile, "--callback", "https://hooks.example.com/x"}, exitInvalid, "callback.url: callbacks are disabled"},
		{"callback host off the list", append(up, "CALLBACK_ALLOWED_HOSTS=hooks.example.com"), []string{"export", "--manual", "m", "--version", "1", "--html-file", htmlFile, "--callback", "https://evil.example.net/x"}, exitInvalid, "callback.url"},
		{"unknown command", up, []string{"frobnicate"}, exitInvalid, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, tt.environ, tt.args...)
			if r.code != tt.wantCode || !strings.Contains(r.stderr, tt.wantErr) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", r.code, r.stderr, tt.wantCode, tt.wantErr)
			}
		})
	}
}

// TestCancel_ThenStatusSaysCanceled: an export enqueued with no worker
// running is canceled by `enqueue cancel` (exit 0, canceled); status then
// says canceled (exit 1, like a failure); a second cancel exits 1.
func TestCancel_ThenStatusSaysCanceled(t *testing.T) {
	srv := testsupport.StartRedis(t)
	env := []string{"REDIS_URL=" + srv.URL()}
	htmlFile := filepath.Join(t.TempDir(), "m.html")
	if err := os.WriteFile(htmlFile, []byte("<!doctype html><h1>Manual</h1>"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, env, "export", "--manual", "m", "--version", "1", "--html-file", htmlFile, "--json")
	var job struct {
		TaskID string `json:"task_id"`
	}
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &job) != nil || job.TaskID == "" {
		t.Fatalf("export: %+v", r)
	}
	if r := runCLI(t, env, "cancel", job.TaskID, "--json"); r.code != exitOK || !strings.Contains(r.stdout, `"state":"canceled"`) {
		t.Fatalf("cancel: %+v", r)
	}
	if r := runCLI(t, env, "status", job.TaskID); r.code != exitFailed || !strings.Contains(r.stdout, ": canceled") {
		t.Errorf("status after cancel: %+v", r)
	}
	if r := runCLI(t, env, "cancel", job.TaskID); r.code != exitFailed || !strings.Contains(r.stderr, "canceled already") {
		t.Errorf("second cancel: %+v", r)
	}
}

func TestExport_EnqueuesTheContractPayload(t *testing.T) {
	srv := testsupport.StartRedis(t)
	environ := []string{"REDIS_URL=" + srv.URL(), "ALLOWED_HOSTS=docs.example.com"}
	r := runCLI(t, environ, "export", "--manual", "ops-guide", "--version", "2026.11.3",
		"--url", "https://docs.example.com/ops-guide/print", "--paper", "Letter", "--landscape", "--outline", "--queue", "critical", "--json")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var out struct {
		TaskID      string `json:"task_id"`
		Queue       string `json:"queue"`
		ArtifactKey string `json:"artifact_key"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.TaskID == "" || out.Queue != "critical" {
		t.Fatalf("stdout %q: %v", r.stdout, err)
	}
	insp := asynq.NewInspector(asynq.RedisClientOpt{Addr: srv.Addr()})
	t.Cleanup(func() { _ = insp.Close() })
	info, err := insp.GetTaskInfo("critical", out.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	p, err := spec.DecodeEnvelope(info.Payload)
	if err != nil {
		t.Fatalf("payload on the queue is not a valid v1 payload: %v", err)
	}
	if p.V != 1 || p.ManualID != "ops-guide" || p.Options.Paper != "Letter" || !p.Options.Landscape || !p.Options.Outline {
		t.Fatalf("payload = %+v", p)
	}
	if info.Type != tasks.TypeExport || info.Retention <= 0 {
		t.Fatalf("task type %q retention %s: results would not be kept", info.Type, info.Retention)
	}
	if out.ArtifactKey != p.ArtifactKey() {
		t.Fatalf("printed key %s, payload key %s", out.ArtifactKey, p.ArtifactKey())
	}

	st := runCLI(t, environ, "status", out.TaskID, "--json")
	if st.code != exitOK || !strings.Contains(st.stdout, `"state":"pending"`) {
		t.Fatalf("status: exit %d, %s %s", st.code, st.stdout, st.stderr)
	}
}

func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"--version"}} {
		r := runCLI(t, nil, args...)
		if r.code != exitOK || r.stdout == "" {
			t.Fatalf("%v: exit %d, stdout %q", args, r.code, r.stdout)
		}
	}
}
