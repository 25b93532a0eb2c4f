package worker

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/testing/pdfcheck"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestWorker_FastWebView: options.fast_web_view stores a linearized PDF
// (qpdf --check-linearization passes) with everything else asked for kept:
// a page alone, a page encrypted (still encrypted with the same passwords
// and permissions), and a manual from chapters (its outline kept). Without
// the option the same document is stored as Chromium printed it, not
// linearized, under another key.
func TestWorker_FastWebView(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("qpdf"); err != nil {
		t.Fatal("qpdf is missing (make setup installs it)")
	}
	redis := testsupport.StartRedis(t)
	cfg := loadConfig(t, "REDIS_URL="+redis.URL(), "STORAGE_URL=file://"+t.TempDir(),
		"ADMIN_ADDR=127.0.0.1:"+strconv.Itoa(testsupport.FreePort(t)),
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "ALLOWED_HOSTS=")
	startWorker(t, cfg, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}})

	const userPW, ownerPW = "reader 7f3a", "owner-9c2e"
	chapters := make([]exportclient.Chapter, 3)
	for i := range chapters {
		chapters[i] = exportclient.Chapter{Title: fmt.Sprintf("Chapter %d", i+1),
			HTML: fmt.Sprintf("<h1>Part %d</h1><p>Text of part %d.</p>", i+1, i+1)}
	}
	for _, tc := range []struct {
		name     string
		req      exportclient.Request
		password string            // to open the stored PDF
		want     map[string]string // pdfinfo's fields
	}{
		{name: "page", req: exportclient.Request{HTML: docManual}, want: map[string]string{"Pages": "5"}},
		{name: "encrypted page", password: userPW, req: exportclient.Request{HTML: docManual, Options: exportclient.Options{
			Encryption: &exportclient.Encryption{UserPassword: userPW, OwnerPassword: ownerPW, Allow: []string{"print"}}}},
			want: map[string]string{"Pages": "5", "Encrypted": "yes (print:yes copy:no change:no addNotes:no algorithm:AES-256)"}},
		{name: "manual", req: exportclient.Request{Chapters: chapters, Options: exportclient.Options{Outline: true}},
			want: map[string]string{"Pages": "3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			export := func(fast bool) (exportclient.Status, string) {
				t.Helper()
				req := tc.req
				req.ManualID, req.Version = "fast-"+strings.ReplaceAll(tc.name, " ", "-"), "1"
				req.Options.FastWebView = fast
				return exportCompleted(ctx, t, c, req)
			}
			var pw []string
			if tc.password != "" {
				pw = []string{"--password=" + tc.password}
			}
			st, path := export(true)
			if out, ok := linearized(pw, path); !ok {
				t.Fatalf("qpdf --check-linearization:\n%s", out)
			}
			tool(t, false, "qpdf", append(pw, "--check", path)...)
			info := pdfInfo(ctx, t, pdfcheck.Poppler{Path: path, UserPassword: tc.password})
			for field, want := range tc.want {
				if info[field] != want {
					t.Errorf("pdfinfo: %s %q, want %q (%v)", field, info[field], want, info)
				}
			}
			if info["Optimized"] != "yes" {
				t.Errorf("pdfinfo: Optimized %q, want yes (%v)", info["Optimized"], info)
			}
			if tc.req.Chapters != nil {
				outline, _ := tool(t, false, "qpdf", "--json", "--json-key=outlines", path)
				for _, ch := range chapters {
					if !strings.Contains(outline, `"title": "`+ch.Title+`"`) {
						t.Errorf("outline lost %q:\n%.2000s", ch.Title, outline)
					}
				}
			}
			plain, plainPath := export(false)
			if plain.Result.ArtifactKey == st.Result.ArtifactKey {
				t.Fatalf("fast_web_view and without it share the key %s", st.Result.ArtifactKey)
			}
			if out, ok := linearized(pw, plainPath); ok {
				t.Errorf("the PDF stored without fast_web_view is linearized:\n%s", out)
			}
		})
	}
}

// linearized reports whether qpdf finds the PDF at path linearized without
// errors (it exits 0 for a file that is not linearized at all).
func linearized(pw []string, path string) (string, bool) {
	out, err := exec.Command("qpdf", append(pw, "--check-linearization", path)...).CombinedOutput()
	return string(out), err == nil && strings.Contains(string(out), "no linearization errors")
}
