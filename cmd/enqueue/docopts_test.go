package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestExport_DocumentOptionFlags: the document options' flags build the
// request; passwords come from env: and file: values, never reach the
// queued payload, and wait beside the task; a bad value exits 2 naming the
// field.
func TestExport_DocumentOptionFlags(t *testing.T) {
	srv := testsupport.StartRedis(t)
	t.Setenv("PDF_OWNER_PW", "owner-pw-from-env")
	pwFile := filepath.Join(t.TempDir(), "user-pw")
	if err := os.WriteFile(pwFile, []byte("user-pw-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	environ := []string{"REDIS_URL=" + srv.URL(), "ALLOWED_HOSTS=docs.example.com"}
	base := []string{"export", "--manual", "ops-guide", "--version", "1", "--url", "https://docs.example.com/print"}
	r := runCLI(t, environ, append(base, "--title", "Ops guide", "--author", "Docs team", "--subject", "Operations",
		"--keywords", "ops, guide", "--creator", "CMS", "--language", "en-GB",
		"--watermark", "DRAFT", "--watermark-opacity", "0.3", "--watermark-angle", "30", "--watermark-font-size", "60",
		"--user-password", "file:"+pwFile, "--owner-password", "env:PDF_OWNER_PW", "--allow", "print,copy", "--json")...)
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var out struct {
		TaskID string `json:"task_id"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	info, err := asynq.NewInspector(asynq.RedisClientOpt{Addr: srv.Addr()}).GetTaskInfo("default", out.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	p, err := spec.DecodeEnvelope(info.Payload)
	if err != nil {
		t.Fatal(err)
	}
	m, w, e := p.Options.Metadata, p.Options.Watermark, p.Options.Encryption
	if m == nil || m.Title != "Ops guide" || m.Author != "Docs team" || m.Subject != "Operations" || strings.Join(m.Keywords, "|") != "ops|guide" || m.Creator != "CMS" || m.Language != "en-GB" {
		t.Errorf("metadata %+v", m)
	}
	if w == nil || w.Text != "DRAFT" || *w.Opacity != 0.3 || *w.Angle != 30 || *w.FontSizePt != 60 {
		t.Errorf("watermark %+v", w)
	}
	if e == nil || strings.Join(e.Allow, ",") != "print,copy" || p.EncryptionRef == nil {
		t.Errorf("encryption %+v ref %+v", e, p.EncryptionRef)
	}
	for _, s := range []string{"owner-pw-from-env", "user-pw-from-file"} {
		if strings.Contains(string(info.Payload), s) || strings.Contains(r.stdout+r.stderr, s) {
			t.Errorf("the password %s is in the payload or the output", s)
		}
	}
	if n := srv.Client().Exists(t.Context(), "pdfexport:passwords:{"+out.TaskID+"}").Val(); n != 1 {
		t.Error("the passwords are not stored beside the task")
	}

	for _, tc := range []struct {
		args  []string
		field string
	}{
		{[]string{"--owner-password", "env:PDF_OWNER_PW", "--allow", "print,fly"}, "options.encryption.allow[1]"},
		{[]string{"--user-password", "u"}, "options.encryption.owner_password"},
		{[]string{"--watermark", "X", "--watermark-opacity", "2"}, "options.watermark.opacity"},
		{[]string{"--language", "not a tag"}, "options.metadata.language"},
		{[]string{"--owner-password", "env:PDF_NOT_SET"}, "--owner-password"},
	} {
		r := runCLI(t, environ, append(base, tc.args...)...)
		if r.code != exitInvalid || !strings.Contains(r.stderr, tc.field) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %s", tc.args, r.code, r.stderr, tc.field)
		}
	}
}
