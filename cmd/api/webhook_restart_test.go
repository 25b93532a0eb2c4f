package main

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/testing/harness"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestBinaries_GotenbergWebhookSurvivesRestart: a conversion with webhook
// headers is answered 204 once its export and its delivery are queued in
// Redis, so the delivery survives what holds it: bin/api stops before
// any worker runs, a new bin/api and a worker start, and the PDF reaches
// the webhook; the receiver's first refusal is retried with backoff. A
// conversion with PDF-engine steps (a stamp from a PDF file) keeps them
// across the restart: the delivered PDF carries the stamp. Its spooled
// step file waits in storage for the delivery and is deleted after it;
// the conversion's artifact stays.
func TestBinaries_GotenbergWebhookSurvivesRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	bin := testsupport.Binaries(t)
	cases := []struct {
		name     string
		fields   map[string]string
		files    map[string][]byte // field: a file named <field>.pdf
		wantText []string
	}{
		{"conversion", nil, nil, []string{"Survived a restart"}},
		{"conversion with a stamp", map[string]string{"stampSource": "pdf"},
			map[string][]byte{"stamp": testsupport.TextPDF("STAMPEDMARK")}, []string{"Survived a restart", "STAMPEDMARK"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			webhookSurvivesRestart(t, bin, c.fields, c.files, c.wantText)
		})
	}
}

func webhookSurvivesRestart(t *testing.T, bin string, fields map[string]string, files map[string][]byte, wantText []string) {
	redis := testsupport.StartRedis(t)
	var calls atomic.Int32
	got := make(chan []byte, 4)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable) // the first attempt is refused
			return
		}
		got <- append([]byte(r.URL.Path+" "), body...)
	}))
	t.Cleanup(receiver.Close)
	dir := t.TempDir()
	addr := "127.0.0.1:" + strconv.Itoa(testsupport.FreePort(t))
	admin := "127.0.0.1:" + strconv.Itoa(testsupport.FreePort(t))
	common := []string{"REDIS_URL=" + redis.URL(), "STORAGE_URL=file://" + filepath.Join(dir, "artifacts"),
		"ALLOWED_HOSTS=docs.example.com", "LOG_FORMAT=text"}
	startAPI := func() *harness.Proc {
		p, err := harness.Start("api", "", filepath.Join(bin, "api"), append(common, "API_ADDR="+addr,
			"CALLBACK_ALLOWED_HOSTS="+strings.TrimPrefix(receiver.URL, "http://")))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Kill)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := harness.WaitHTTP(ctx, "http://"+addr+"/healthz", nil); err != nil {
			t.Fatalf("%v\n%s", err, p.Output())
		}
		return p
	}
	api := startAPI()

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("files", "index.html")
	_, _ = fw.Write([]byte("<p>Survived a restart</p>"))
	for k, v := range fields {
		_ = mw.WriteField(k, v)
	}
	for field, data := range files {
		fw, _ := mw.CreateFormFile(field, field+".pdf")
		_, _ = fw.Write(data)
	}
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/forms/chromium/convert/html", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Gotenberg-Webhook-Url", receiver.URL+"/hook")
	req.Header.Set("Gotenberg-Webhook-Error-Url", receiver.URL+"/error")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("%d, want 204", resp.StatusCode)
	}
	if err := api.Stop(10 * time.Second); err != nil {
		t.Fatalf("stopping bin/api: %v\n%s", err, api.Output())
	}
	spool := filepath.Join(dir, "artifacts", "gotenberg-webhooks")
	if n := len(entries(spool)); n != min(len(files), 1) {
		t.Fatalf("the spool holds %v before the delivery, want %d folder", entries(spool), min(len(files), 1))
	}
	if calls.Load() != 0 {
		t.Fatal("delivered before any worker ran")
	}
	api = startAPI()
	worker, err := harness.Start("worker", "", filepath.Join(bin, "worker"), append(append(os.Environ(), common...),
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "ADMIN_ADDR="+admin))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(worker.Kill)
	select {
	case b := <-got:
		if !bytes.HasPrefix(b, []byte("/hook %PDF-")) {
			t.Errorf("delivered %.40q", b)
		}
		text := testsupport.PDFText(t, bytes.TrimPrefix(b, []byte("/hook ")))
		// A stamp is set diagonally: its letters come out on many lines.
		joined := strings.Join(strings.Fields(text), "")
		for _, want := range wantText {
			if !strings.Contains(joined, strings.Join(strings.Fields(want), "")) {
				t.Errorf("PDF text %q lacks %q", text, want)
			}
		}
	case <-time.After(120 * time.Second):
		t.Fatalf("no delivery after the restart\napi:\n%s\nworker:\n%s", api.Tail(30), worker.Tail(30))
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d calls, want the refused one and the delivery", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(entries(spool))+len(entries(filepath.Join(dir, "artifacts", ".meta", "gotenberg-webhooks"))) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the spool still holds %v after the delivery\napi:\n%s", entries(spool), api.Tail(30))
		}
		time.Sleep(50 * time.Millisecond)
	}
	var pdfs []string
	_ = filepath.WalkDir(filepath.Join(dir, "artifacts"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if err == nil && strings.HasSuffix(path, ".pdf") {
			pdfs = append(pdfs, path)
		}
		return nil
	})
	if len(pdfs) != 1 {
		t.Errorf("stored PDFs %v, want the conversion's artifact alone", pdfs)
	}
}

// entries names what the directory holds, nothing when it is missing.
func entries(dir string) []string {
	es, _ := os.ReadDir(dir)
	names := make([]string, 0, len(es))
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}
