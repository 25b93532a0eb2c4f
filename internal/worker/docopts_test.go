package worker

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/testing/harness"
	"github.com/pdfexport/pdfexport/internal/testing/pdfcheck"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// docManual has five pages, one heading each (an outline of five entries).
const docManual = `<!doctype html><html lang="en"><head><title>Chromium's title</title>
<style>h1 { break-before: page } h1:first-of-type { break-before: auto }</style></head><body>
<h1>Installing</h1><p>Install it.</p><h1>Configuring</h1><p>Configure it.</p>
<h1>Running</h1><p>Run it.</p><h1>Upgrading</h1><p>Upgrade it.</p><h1>Removing</h1><p>Remove it.</p>
</body></html>`

// tool runs a PDF tool and returns its output; it fails the test when the
// tool fails, unless mayFail.
func tool(t *testing.T, mayFail bool, name string, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil && !mayFail {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out), err
}

// pdfInfo is pdfinfo's fields of pdf; it fails the test on an error.
func pdfInfo(ctx context.Context, t *testing.T, pdf pdfcheck.Poppler) pdfcheck.Info {
	t.Helper()
	info, err := pdf.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// pageText is pdftotext's text of a page of pdf; it fails the test on an
// error.
func pageText(ctx context.Context, t *testing.T, pdf pdfcheck.Poppler, mode pdfcheck.TextMode, page int) string {
	t.Helper()
	text, err := pdf.PageText(ctx, mode, page)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// exportCompleted enqueues r, waits for it, fails the test unless it
// completed, and returns its status and the stored file's path.
func exportCompleted(ctx context.Context, t *testing.T, c *exportclient.Client, r exportclient.Request) (exportclient.Status, string) {
	t.Helper()
	job, err := c.Enqueue(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Wait(ctx, job.TaskID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != exportclient.StateCompleted {
		t.Fatalf("export %+v", st)
	}
	return st, strings.TrimPrefix(st.Result.URL, "file://")
}

// squeeze drops all white space: pdftotext puts a rotated watermark's
// letters on lines of their own.
func squeeze(s string) string { return strings.Join(strings.Fields(s), "") }

// TestWorker_DocumentOptions: metadata, a watermark and AES-256 encryption
// end to end, checked with the real PDF tools: pdfinfo shows the metadata;
// the watermark is text on the first and the last page; the encrypted PDF
// does not open without its user password and has the permissions asked
// for; qpdf --check passes on every output; tagging, the outline and the
// page count survive the post-processing; and the passwords are in no
// status, log line, dashboard payload or Redis value once the export is
// final. An export without document options is streamed as before
// (Chromium's own producer, no post-processing).
func TestWorker_DocumentOptions(t *testing.T) {
	// Serial (no t.Parallel): it looks for post-processing files in the process-wide TMPDIR.
	missing := pdfcheck.MissingPopplerTools()
	if _, err := exec.LookPath("qpdf"); err != nil {
		missing = append(missing, "qpdf")
	}
	if len(missing) > 0 {
		t.Fatalf("%v missing (make setup installs poppler-utils and qpdf)", missing)
	}
	redis := testsupport.StartRedis(t)
	store := t.TempDir()
	admin := "127.0.0.1:" + strconv.Itoa(testsupport.FreePort(t))
	cfg := loadConfig(t, "REDIS_URL="+redis.URL(), "STORAGE_URL=file://"+store, "ADMIN_ADDR="+admin, "DASHBOARD=true",
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "ALLOWED_HOSTS=", "LOG_LEVEL=debug")
	var logs harness.SyncBuffer
	startWorker(t, cfg, Options{Logger: debugLogger(&logs)})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}})

	const userPW, ownerPW = "reader-5e1b9", "owner-c07d2"
	export := func(opts exportclient.Options) (exportclient.Status, string) {
		t.Helper()
		return exportCompleted(ctx, t, c, exportclient.Request{ManualID: "docopts", Version: "1", HTML: docManual, Options: opts})
	}

	// Everything at once, with the outline (and so tagging).
	full, path := export(exportclient.Options{Outline: true,
		Metadata:   &exportclient.Metadata{Title: "Ops guide", Author: "Docs team", Subject: "Operations", Keywords: []string{"ops", "guide"}, Creator: "pdfexport tests", Language: "en-GB"},
		Watermark:  &exportclient.Watermark{Text: "CONFIDENTIAL DRAFT"},
		Encryption: &exportclient.Encryption{UserPassword: userPW, OwnerPassword: ownerPW, Allow: []string{"print", "copy"}}})
	if full.Result.Pages != 5 {
		t.Errorf("result pages = %d, want 5", full.Result.Pages)
	}
	if info, err := (pdfcheck.Poppler{Path: path}).Info(ctx); err == nil {
		t.Errorf("the encrypted PDF opens without its user password: %v", info)
	}
	encrypted := pdfcheck.Poppler{Path: path, UserPassword: userPW}
	info := pdfInfo(ctx, t, encrypted)
	for field, want := range map[string]string{"Title": "Ops guide", "Author": "Docs team", "Subject": "Operations",
		"Keywords": "ops, guide", "Creator": "pdfexport tests", "Tagged": "yes", "Pages": "5",
		"Encrypted": "yes (print:yes copy:yes change:no addNotes:no algorithm:AES-256)"} {
		if info[field] != want {
			t.Errorf("pdfinfo -upw: %s %q, want %q (%v)", field, info[field], want, info)
		}
	}
	for _, page := range []int{1, 5} {
		text := pageText(ctx, t, encrypted, pdfcheck.Raw, page)
		if !strings.Contains(squeeze(text), "CONFIDENTIALDRAFT") {
			t.Errorf("page %d has no watermark text: %q", page, text)
		}
	}
	tool(t, false, "qpdf", "--password="+userPW, "--check", path)
	outline, _ := tool(t, false, "qpdf", "--password="+ownerPW, "--json", "--json-key=outlines", path)
	for _, h := range []string{"Installing", "Configuring", "Running", "Upgrading", "Removing"} {
		if !strings.Contains(outline, `"title": "`+h+`"`) {
			t.Errorf("outline lost %q:\n%.2000s", h, outline)
		}
	}
	qdf, _ := tool(t, false, "qpdf", "--password="+ownerPW, "--decrypt", "--qdf", "--object-streams=disable", path, "-")
	for _, want := range []string{"/StructTreeRoot", "/MarkInfo", "/Lang (en-GB)"} {
		if !strings.Contains(qdf, want) {
			t.Errorf("the catalog lost %s", want)
		}
	}

	// Metadata and a watermark, no encryption, untagged.
	_, path = export(exportclient.Options{Metadata: &exportclient.Metadata{Title: "Plain title"},
		Watermark: &exportclient.Watermark{Text: "SAMPLE", Opacity: new(0.5), Angle: new(0.0), FontSizePt: new(30.0)}})
	plain := pdfcheck.Poppler{Path: path}
	info = pdfInfo(ctx, t, plain)
	if info["Title"] != "Plain title" || info["Encrypted"] != "no" || info["Pages"] != "5" {
		t.Errorf("pdfinfo: %v", info)
	}
	for _, page := range []int{1, 5} {
		if text := pageText(ctx, t, plain, pdfcheck.Reading, page); !strings.Contains(text, "SAMPLE") {
			t.Errorf("page %d has no watermark text: %q", page, text)
		}
	}
	tool(t, false, "qpdf", "--check", path)

	// No document option: streamed as before.
	_, path = export(exportclient.Options{})
	info = pdfInfo(ctx, t, pdfcheck.Poppler{Path: path})
	if !strings.HasPrefix(info["Producer"], "Skia") || info["Title"] != "Chromium's title" {
		t.Errorf("a plain export was post-processed: %v", info)
	}
	tool(t, false, "qpdf", "--check", path)

	// The passwords are nowhere but in the PDF.
	st, err := c.Status(ctx, full.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	status, _ := json.Marshal(st)
	resp, err := http.Get("http://" + admin + "/monitoring/api/queues/default/completed_tasks")
	if err != nil {
		t.Fatal(err)
	}
	dashboard, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(dashboard), full.TaskID) || !strings.Contains(string(dashboard), "encryption_ref") {
		t.Fatalf("dashboard %d: %.500s", resp.StatusCode, dashboard)
	}
	for what, text := range map[string]string{"status": string(status), "logs": logs.String(), "dashboard": string(dashboard)} {
		for _, s := range []string{userPW, ownerPW} {
			if strings.Contains(text, s) {
				t.Errorf("%s contain the password %s", what, s)
			}
		}
	}
	testsupport.AssertRedisHoldsNo(t, redis.Client(), userPW, ownerPW)
	if left, _ := redis.Client().Keys(ctx, "pdfexport:passwords:{*}").Result(); len(left) != 0 {
		t.Errorf("passwords left in Redis after the export was final: %v", left)
	}
	if entries, _ := os.ReadDir(os.TempDir()); len(entries) > 0 {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "pdfexport-post-") {
				t.Errorf("post-processing left %s behind", e.Name())
			}
		}
	}
}
