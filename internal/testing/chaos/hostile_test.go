package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/tasks"
	"github.com/pdfexport/pdfexport/internal/testing/harness"
	"github.com/pdfexport/pdfexport/internal/testing/pdfcheck"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// hostileEnv is what the hostile-input cases share: a cluster whose
// ALLOWED_HOSTS lists the "allowed" test server and, by name only, a
// "forbidden" one that serves a secret and counts every request it gets.
type hostileEnv struct {
	c          *cluster
	allowed    *httptest.Server
	forbidden  *httptest.Server
	forbidHits atomic.Int64
	secret     string
	okHost     string // 127.0.0.1:port of the allowed server
	forbPort   string
}

func newHostileEnv(t *testing.T) *hostileEnv {
	h := &hostileEnv{secret: "SECRET-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	h.forbidden = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.forbidHits.Add(1)
		t.Logf("forbidden server got %s %s", r.Method, r.URL)
		w.Header().Set("Access-Control-Allow-Origin", "*")
		fmt.Fprintf(w, "<!doctype html><p>%s</p>", h.secret)
	}))
	t.Cleanup(h.forbidden.Close)
	_, h.forbPort, _ = net.SplitHostPort(h.forbidden.Listener.Addr().String())
	forb := "http://127.0.0.1:" + h.forbPort
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><h1>Allowed page</h1>`)
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers
	})
	mux.HandleFunc("/slow-body", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<!doctype html><h1>never ends</h1>")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	mux.HandleFunc("/redirect-loopback", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, forb+"/secret", http.StatusFound)
	})
	mux.HandleFunc("/redirect-metadata", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	})
	mux.HandleFunc("/leaky", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><h1>Leaky page</h1>
<iframe src="%[1]s/iframe"></iframe><img src="%[1]s/img.png"><img src="http://169.254.169.254/latest/meta-data/">
<link rel="stylesheet" href="%[1]s/style.css"><div id="out">fetch pending</div>
<script>
fetch("%[1]s/fetch").then(r => r.text()).then(t => { document.getElementById("out").textContent = t }).catch(e => { document.getElementById("out").textContent = "fetch refused" });
const x = new XMLHttpRequest(); x.open("GET", "%[1]s/xhr"); x.onload = () => document.body.append(x.responseText); x.send();
</script>`, forb)
	})
	h.allowed = httptest.NewServer(mux)
	t.Cleanup(h.allowed.Close)
	h.okHost = h.allowed.Listener.Addr().String()
	h.c = newCluster(t, clusterConfig{Workers: 2, MaxRetry: 1, Env: []string{
		"RENDER_TIMEOUT=5s", "RENDER_CONCURRENCY=2",
		"ALLOWED_HOSTS=docs.example.com," + h.okHost + ",localhost:" + h.forbPort,
	}})
	return h
}

type hostileCase struct {
	name  string
	iface string // cli | http | task
	args  []string
	body  string
	want  string // the field named by the error (cli: a substring of stderr)
	code  int    // http status, default 400
}

// TestHostileInputs: at least 40 hostile requests through every way in: the
// CLI (exit 2, stderr names the field), the HTTP API (400 with the field),
// raw task payloads put on the queue with asynq directly (archived at once,
// the error naming the field), and valid requests for hostile pages (clear
// errors, nothing forbidden fetched or printed, workers survive).
func TestHostileInputs(t *testing.T) {
	sc := &Scenario{Name: "0 hostile inputs", Fault: "hostile requests and pages (no process fault)"}
	record(t, sc)
	h := newHostileEnv(t)
	c := h.c
	c.countLeaks(sc)
	dir := t.TempDir()
	big := filepath.Join(dir, "big.html")
	if err := os.WriteFile(big, bytes.Repeat([]byte("a"), spec.MaxHTMLBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	latin1 := filepath.Join(dir, "latin1.html")
	if err := os.WriteFile(latin1, []byte("<!doctype html><p>caf\xe9 cr\xe8me"), 0o644); err != nil {
		t.Fatal(err)
	}
	okHTML := filepath.Join(dir, "ok.html")
	if err := os.WriteFile(okHTML, []byte("<p>ok"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"export", "--manual", "m", "--version", "1"}
	cli := func(name, want string, args ...string) hostileCase {
		full := append(append([]string(nil), base...), args...)
		// later flags win: --manual/--version in args override the base
		return hostileCase{name: name, iface: "cli", args: full, want: want}
	}
	url := func(u string) []string { return []string{"--url", u} }
	cases := []hostileCase{
		cli("manual_id path traversal", "manual_id", "--manual", "../../etc", "--html-file", okHTML),
		cli("manual_id with slash", "manual_id", "--manual", "a/b", "--html-file", okHTML),
		cli("manual_id with newline", "manual_id", "--manual", "a\nb", "--html-file", okHTML),
		cli("manual_id with NUL-like control", "manual_id", "--manual", "a\x01b", "--html-file", okHTML),
		cli("version '..'", "version", "--version", "..", "--html-file", okHTML),
		cli("version 'a..b'", "version", "--version", "a..b", "--html-file", okHTML),
		cli("version 200 characters", "version", "--version", strings.Repeat("v", 200), "--html-file", okHTML),
		cli("file: URL", "source.url", url("file:///etc/passwd")...),
		cli("javascript: URL", "source.url", url("javascript:alert(1)")...),
		cli("loopback", "source.url", url("http://127.0.0.1/")...),
		cli("decimal loopback", "source.url", url("http://2130706433/")...),
		cli("octal loopback", "source.url", url("http://0177.0.0.1/")...),
		cli("hex loopback", "source.url", url("http://0x7f000001/")...),
		cli("short loopback 127.1", "source.url", url("http://127.1/")...),
		cli("IPv4-mapped IPv6 loopback", "source.url", url("http://[::ffff:127.0.0.1]/")...),
		cli("IPv6 loopback", "source.url", url("http://[::1]/")...),
		cli("metadata 169.254.169.254", "source.url", url("http://169.254.169.254/latest/meta-data/")...),
		cli("metadata as IPv4-mapped hex IPv6", "source.url", url("http://[::ffff:a9fe:a9fe]/")...),
		cli("private 10/8", "source.url", url("http://10.0.0.1/")...),
		cli("private 192.168/16", "source.url", url("http://192.168.1.1/")...),
		cli("link-local IPv6", "source.url", url("http://[fe80::1]/")...),
		cli("unspecified 0.0.0.0", "source.url", url("http://0.0.0.0/")...),
		cli("userinfo trick allowed@evil", "source.url", url("http://docs.example.com@evil.example.net/")...),
		cli("allowed host as prefix of evil", "source.url", url("http://docs.example.com.evil.net/")...),
		cli("localhost by name", "source.url", url("http://localhost/")...),
		cli("listed port, other port", "source.url", url("http://"+strings.Split(h.okHost, ":")[0]+":1/")...),
		cli("backslash in URL", "source.url", url(`http:\\docs.example.com\x`)...),
		cli("paper B5", "options.paper", "--html-file", okHTML, "--paper", "B5"),
		cli("scale 9", "options.scale", "--html-file", okHTML, "--scale", "9"),
		cli("scale NaN", "options.scale", "--html-file", okHTML, "--scale", "NaN"),
		cli("margin -5", "options.margin_mm", "--html-file", okHTML, "--margin-mm", "-5"),
		cli("page ranges backwards", "options.page_ranges", "--html-file", okHTML, "--page-ranges", "5-2"),
		cli("media tv", "options.media", "--html-file", okHTML, "--media", "tv"),
		cli("HTML over 2 MiB", "--html-file", "--html-file", big),
		cli("HTML not UTF-8 (Latin-1)", "source.html", "--html-file", latin1),
		cli("URL and HTML", "--html-file", "--html-file", okHTML, "--url", "https://docs.example.com/"),
		cli("no source", "source"),
		cli("request id with control", "request_id", "--html-file", okHTML, "--request-id", "a\x1bb"),

		{name: "malformed JSON", iface: "http", body: `{"v":1,`, want: "payload"},
		{name: "not an object", iface: "http", body: `[1,2]`, want: "payload"},
		{name: "empty body", iface: "http", body: ``, want: "payload"},
		{name: "trailing data", iface: "http", body: `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"}} {}`, want: "payload"},
		{name: "unknown top-level field", iface: "http", body: `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"},"colour":"red"}`, want: "colour"},
		{name: "unknown nested field", iface: "http", body: `{"v":1,"manual_id":"a","version":"1","source":{"html":"x","file":"/etc/passwd"}}`, want: "file"},
		{name: "empty field name", iface: "http", body: `{"":0}`, want: "payload"},
		{name: "wrong type v", iface: "http", body: `{"v":"1","manual_id":"a","version":"1","source":{"html":"x"}}`, want: "v"},
		{name: "wrong nested type", iface: "http", body: `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"},"options":{"scale":"big"}}`, want: "options.scale"},
		{name: "number overflow", iface: "http", body: `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"},"options":{"scale":1e400}}`, want: "options.scale"},
		{name: "schema version 2", iface: "http", body: `{"v":2,"manual_id":"a","version":"1","source":{"html":"x"}}`, want: "v"},
		{name: "manual_id traversal", iface: "http", body: `{"v":1,"manual_id":"../../etc/passwd","version":"1","source":{"html":"x"}}`, want: "manual_id"},
		{name: "manual_id escaped NUL", iface: "http", body: `{"v":1,"manual_id":"a\u0000b","version":"1","source":{"html":"x"}}`, want: "manual_id"},
		{name: "version escaped newline", iface: "http", body: `{"v":1,"manual_id":"a","version":"1\n2","source":{"html":"x"}}`, want: "version"},
		{name: "metadata URL", iface: "http", body: `{"v":1,"manual_id":"a","version":"1","source":{"url":"http://169.254.169.254/"}}`, want: "source.url"},
		{name: "userinfo URL", iface: "http", body: `{"v":1,"manual_id":"a","version":"1","source":{"url":"https://docs.example.com:443@127.0.0.1/"}}`, want: "source.url"},
		{name: "wait_for over 4 KiB", iface: "http", body: `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"},"options":{"wait_for":"` + strings.Repeat("x", spec.MaxWaitForBytes+1) + `"}}`, want: "options.wait_for"},
		{name: "header over 64 KiB", iface: "http", body: `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"},"options":{"header_html":"` + strings.Repeat("x", spec.MaxTemplateBytes+1) + `"}}`, want: "options.header_html"},
		{name: "body over the payload limit", iface: "http", body: `{"v":1,"manual_id":"a","version":"1","source":{"html":"` + strings.Repeat("a", spec.MaxPayloadBytes) + `"}}`, want: "payload", code: http.StatusRequestEntityTooLarge},

		{name: "forged credentials_ref", iface: "http", body: `{"v":1,"manual_id":"a","version":"1","source":{"url":"https://docs.example.com/","credentials_ref":{"id":"victim","identity":"` + strings.Repeat("ab", 32) + `"}}}`, want: "source.credentials_ref"},
		{name: "forged html_ref", iface: "http", body: `{"v":1,"manual_id":"a","version":"1","source":{"html_ref":{"sha256":"` + strings.Repeat("ab", 32) + `","bytes":100}}}`, want: "source.html_ref"},
		{name: "manual without chapters", iface: "http", body: `{"v":1,"manual_id":"a","version":"1","source":{"chapters":[]}}`, want: "source.chapters"},
		{name: "manual of 1001 chapters", iface: "http", body: `{"v":1,"manual_id":"a","version":"1","source":{"chapters":[` + strings.TrimSuffix(strings.Repeat(`{"html":"x"},`, spec.MaxChapters+1), ",") + `]}}`, want: "source.chapters"},
		{name: "chapter with url and html", iface: "http", body: `{"v":1,"manual_id":"a","version":"1","source":{"chapters":[{"url":"https://docs.example.com/","html":"x"}]}}`, want: "source.chapters[0]"},
		{name: "chapter at the metadata URL", iface: "http", body: `{"v":1,"manual_id":"a","version":"1","source":{"chapters":[{"html":"x"},{"url":"http://169.254.169.254/latest/meta-data/"}]}}`, want: "source.chapters[1].url"},
		{name: "chapter at a file: URL", iface: "http", body: `{"v":1,"manual_id":"a","version":"1","source":{"chapters":[{"url":"file:///etc/passwd"}]}}`, want: "source.chapters[0].url"},
		{name: "chapter title with a control character", iface: "http", body: `{"v":1,"manual_id":"a","version":"1","source":{"chapters":[{"html":"x","title":"a\u0007b"}]}}`, want: "source.chapters[0].title"},
		{name: "chapters beside a url", iface: "http", body: `{"v":1,"manual_id":"a","version":"1","source":{"url":"https://docs.example.com/","chapters":[{"html":"x"}]}}`, want: "source"},
		{name: "credentials with chapters", iface: "http", body: `{"v":1,"manual_id":"a","version":"1","source":{"chapters":[{"url":"https://docs.example.com/"}],"headers":{"Authorization":"Bearer x"}}}`, want: "source.headers"},
		{name: "toc without chapters", iface: "http", body: `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"},"options":{"toc":true}}`, want: "options.toc"},
		{name: "archival single page", iface: "http", body: `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"},"options":{"pdf_a":"2b"}}`, want: "options.pdf_a"},
		{name: "trace context in the body", iface: "http", body: `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"},"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`, want: "traceparent"},

		{name: "another export's credentials", iface: "task", body: `{"v":1,"manual_id":"a","version":"1","source":{"url":"https://docs.example.com/","credentials_ref":{"id":"victim","identity":"` + strings.Repeat("ab", 32) + `"}}}`, want: "source.credentials_ref"},
		{name: "raw credentials in the queue", iface: "task", body: `{"v":1,"manual_id":"a","version":"1","source":{"url":"https://docs.example.com/","headers":{"Authorization":"Bearer x"}}}`, want: "source.headers"},
		{name: "malformed JSON", iface: "task", body: `{"v":1,`, want: "payload"},
		{name: "unknown field", iface: "task", body: `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"},"exec":"rm -rf /"}`, want: "exec"},
		{name: "manual_id traversal", iface: "task", body: `{"v":1,"manual_id":"../../../etc","version":"1","source":{"html":"x"}}`, want: "manual_id"},
		{name: "version with slash", iface: "task", body: `{"v":1,"manual_id":"a","version":"1/../../x","source":{"html":"x"}}`, want: "version"},
		{name: "file: URL", iface: "task", body: `{"v":1,"manual_id":"a","version":"1","source":{"url":"file:///etc/passwd"}}`, want: "source.url"},
		{name: "metadata URL", iface: "task", body: `{"v":1,"manual_id":"a","version":"1","source":{"url":"http://169.254.169.254/latest/meta-data/"}}`, want: "source.url"},
		{name: "octal loopback URL", iface: "task", body: `{"v":1,"manual_id":"a","version":"1","source":{"url":"http://017700000001/"}}`, want: "source.url"},
		{name: "mapped IPv6 loopback URL", iface: "task", body: `{"v":1,"manual_id":"a","version":"1","source":{"url":"http://[::ffff:7f00:1]/"}}`, want: "source.url"},
		{name: "schema version 0", iface: "task", body: `{"manual_id":"a","version":"1","source":{"html":"x"}}`, want: "v"},
		{name: "wrong type", iface: "task", body: `{"v":1,"manual_id":7,"version":"1","source":{"html":"x"}}`, want: "manual_id"},
		{name: "scale out of range", iface: "task", body: `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"},"options":{"scale":0}}`, want: "options.scale"},
		{name: "manual with a chapter at the metadata URL", iface: "task", body: `{"v":1,"manual_id":"a","version":"1","source":{"chapters":[{"url":"http://169.254.169.254/latest/meta-data/"}]}}`, want: "source.chapters[0].url"},
		// Chapter tasks only workers queue; one written straight into Redis
		// is checked like an envelope.
		{name: "chapter task at the metadata URL", iface: "chapter", body: `{"v":1,"manual_task":"x","index":0,"manual_id":"a","version":"1","chapter":{"url":"http://169.254.169.254/latest/meta-data/"}}`, want: "source.chapters[0].url"},
		{name: "chapter task with an unknown field", iface: "chapter", body: `{"v":1,"manual_task":"x","index":0,"manual_id":"a","version":"1","chapter":{"html":"x"},"exec":"rm -rf /"}`, want: "exec"},
		{name: "chapter task without its manual", iface: "chapter", body: `{"v":1,"index":0,"manual_id":"a","version":"1","chapter":{"html":"x"}}`, want: "manual_task"},
	}

	// HTTP API: bin/api on the same Redis.
	apiAddr := "127.0.0.1:" + strconv.Itoa(testsupport.FreePort(t))
	serve := exec.Command(filepath.Join(c.bin, "api"))
	serve.Env = append(slices.Clone(c.env), "API_ADDR="+apiAddr)
	var serveLog harness.SyncBuffer
	serve.Stdout, serve.Stderr = &serveLog, &serveLog
	served, err := harness.StartTied(serve)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = serve.Process.Signal(syscall.SIGTERM); <-served })
	hctx, hcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer hcancel()
	if err := harness.WaitHTTP(hctx, "http://"+apiAddr+"/healthz", nil); err != nil {
		t.Fatalf("bin/api did not answer: %v", err)
	}

	inspector := asynq.NewInspector(asynq.RedisClientOpt{Addr: c.redis.Addr()})
	defer inspector.Close()
	raw := asynq.NewClient(asynq.RedisClientOpt{Addr: c.redis.Addr()})
	defer raw.Close()
	type pendingTask struct {
		hc hostileCase
		id string
	}
	var queued []pendingTask

	for _, hc := range cases {
		switch hc.iface {
		case "cli":
			cmd := exec.Command(filepath.Join(c.bin, "enqueue"), hc.args...)
			cmd.Env = c.env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := cmd.ProcessState.ExitCode()
			ok := code == 2 && strings.Contains(stderr.String(), hc.want)
			got := fmt.Sprintf("exit %d (%v): %s", code, err, strings.TrimSpace(stderr.String()))
			h.result(t, hc, ok, got)
		case "http":
			resp, err := http.Post("http://"+apiAddr+"/v1/exports", "application/json", strings.NewReader(hc.body))
			if err != nil {
				h.result(t, hc, false, err.Error())
				continue
			}
			var body struct{ Error, Field string }
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			_ = json.Unmarshal(b, &body)
			want := hc.code
			if want == 0 {
				want = http.StatusBadRequest
			}
			ok := resp.StatusCode == want && body.Field == hc.want && body.Error != ""
			h.result(t, hc, ok, fmt.Sprintf("%d %s", resp.StatusCode, truncate(string(b), 300)))
		case "task":
			info, err := raw.Enqueue(tasks.NewExportTask([]byte(hc.body)), asynq.MaxRetry(3), asynq.Retention(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			queued = append(queued, pendingTask{hc, info.ID})
		case "chapter":
			info, err := raw.Enqueue(asynq.NewTask(tasks.TypeChapter, []byte(hc.body)), asynq.MaxRetry(3), asynq.Retention(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			var got *asynq.TaskInfo
			testsupport.Eventually(t, 60*time.Second, func() error {
				got, err = inspector.GetTaskInfo(info.Queue, info.ID)
				if err != nil {
					return err
				}
				if got.State != asynq.TaskStateArchived {
					return fmt.Errorf("chapter task %s", got.State)
				}
				return nil
			})
			h.result(t, hc, got.Retried == 0 && strings.Contains(got.LastErr, hc.want+":"), fmt.Sprintf("state %s, retried %d, error %q", got.State, got.Retried, got.LastErr))
		}
	}

	// Hostile pages: valid requests whose page misbehaves.
	forb := "http://127.0.0.1:" + h.forbPort
	type pageCase struct {
		name, want string // want: "ok" or a substring of the archived error
		req        exportclient.Request
		text       string // must appear in the PDF text (ok cases)
		ex         *export
	}
	rq := func(label string, mutate func(*exportclient.Request)) exportclient.Request {
		r := exportclient.Request{ManualID: "hostile-" + label, Version: "1"}
		mutate(&r)
		return r
	}
	pages := []*pageCase{
		{name: "page that never answers", want: "timed out", req: rq("hang", func(r *exportclient.Request) { r.URL = "http://" + h.okHost + "/hang" })},
		{name: "page whose body never ends", want: "ok-or-timeout", req: rq("slowbody", func(r *exportclient.Request) { r.URL = "http://" + h.okHost + "/slow-body" })},
		{name: "wait_for that never becomes true", want: "timed out", req: rq("never", func(r *exportclient.Request) {
			r.HTML = "<p>never ready"
			r.Options.WaitFor = "window.__never__===true"
		})},
		{name: "redirect to a forbidden loopback port", want: "blocked", req: rq("redir-loop", func(r *exportclient.Request) { r.URL = "http://" + h.okHost + "/redirect-loopback" })},
		{name: "redirect to cloud metadata", want: "blocked", req: rq("redir-meta", func(r *exportclient.Request) { r.URL = "http://" + h.okHost + "/redirect-metadata" })},
		{name: "listed name resolving to loopback (localhost)", want: "blocked", req: rq("localhost", func(r *exportclient.Request) { r.URL = "http://localhost:" + h.forbPort + "/secret" })},
		{name: "iframe, img, css, fetch, XHR to forbidden hosts", want: "ok", text: "Leaky page", req: rq("leaky", func(r *exportclient.Request) { r.URL = "http://" + h.okHost + "/leaky" })},
		{name: "inline HTML reading file:", want: "ok", text: "file probe", req: rq("file", func(r *exportclient.Request) {
			r.HTML = `<!doctype html><p>file probe</p><iframe src="file:///etc/passwd"></iframe><img src="file:///etc/hostname"><object data="file:///etc/passwd"></object>` +
				`<script>fetch("file:///etc/passwd").then(r=>r.text()).then(t=>document.body.append(t)).catch(()=>{})</script>`
		})},
		{name: "popup to a forbidden host", want: "ok", text: "popup opener", req: rq("popup", func(r *exportclient.Request) {
			r.HTML = `<!doctype html><p>popup opener</p><script>const w = window.open("` + forb + `/popup"); if (w) { w.document.write("x") }; window.open("about:blank")</script>`
		})},
		{name: "alert, confirm and prompt dialogs", want: "ok", text: "after dialogs",
			req: rq("dialogs", func(r *exportclient.Request) {
				r.HTML = `<!doctype html><script>alert("a"); confirm("b"); prompt("c")</script><p>after dialogs</p>`
			})},
		{name: "dialog in onbeforeunload", want: "ok", text: "beforeunload page", req: rq("unload", func(r *exportclient.Request) {
			r.HTML = `<!doctype html><p>beforeunload page</p><script>window.onbeforeunload = e => { e.preventDefault(); return "stay" }</script>`
		})},
		{name: "manual whose chapter forges anchor marks and chapter links", want: "ok", text: "forged marks", req: rq("forged", func(r *exportclient.Request) {
			r.Chapters = []exportclient.Chapter{{HTML: `<!doctype html><h1 id="a">forged marks</h1>` +
				`<a href="https://anchor.pdfexport.invalid/a">mark</a> <a href="https://chapter.pdfexport.invalid/999">no such chapter</a> ` +
				`<a href="https://chapter.pdfexport.invalid/-1">negative</a> <a href="https://chapter.pdfexport.invalid/0#a">itself</a>`},
				{HTML: `<!doctype html><h1>second</h1><iframe src="` + forb + `/secret"></iframe>`}}
		})},
		{name: "memory allocated without end", want: "any-error", req: rq("membomb", func(r *exportclient.Request) {
			r.HTML = `<!doctype html><p>bomb</p><script>const a = []; for (;;) { a.push(new Array(1 << 20).fill(Math.random())) }</script>`
		})},
	}
	for _, pc := range pages {
		pc.ex = c.enqueue(pc.name, pc.req)
	}

	// Raw tasks: archived at once (no retries) with an error naming the field.
	for _, pt := range queued {
		st := c.waitState(pt.id, 60*time.Second, exportclient.StateFailed, exportclient.StateCompleted)
		ok := st.State == exportclient.StateFailed && st.Retried == 0 && strings.Contains(st.Error, pt.hc.want+":")
		h.result(t, pt.hc, ok, fmt.Sprintf("state %s, retried %d, error %q", st.State, st.Retried, st.Error))
	}

	var exports []*export
	for _, pc := range pages {
		exports = append(exports, pc.ex)
	}
	c.waitAll(exports, 150*time.Second)
	for _, pc := range pages {
		st := pc.ex.status
		hc := hostileCase{name: pc.name, iface: "render", want: pc.want}
		got := fmt.Sprintf("state %s, retried %d, error %q, wait %v", st.State, st.Retried, st.Error, pc.ex.err)
		var ok bool
		switch pc.want {
		case "ok":
			ok = st.State == exportclient.StateCompleted && st.Result != nil
			if ok {
				text, err := h.pdfText(st.Result.URL)
				ok = err == nil && strings.Contains(text, pc.text) && !strings.Contains(text, h.secret) && !strings.Contains(text, "root:x:0:0")
				got += fmt.Sprintf("; text %q (%v)", truncate(text, 200), err)
			}
		case "ok-or-timeout":
			ok = st.State == exportclient.StateCompleted || (st.State == exportclient.StateFailed && strings.Contains(st.Error, "timed out"))
		case "any-error":
			ok = st.State == exportclient.StateFailed && st.Error != ""
		default:
			ok = st.State == exportclient.StateFailed && strings.Contains(st.Error, pc.want)
			if strings.Contains(pc.want, "timed out") {
				ok = ok && st.Retried == 1 // retried once (MAX_RETRY 1), then archived
			}
		}
		h.result(t, hc, ok, got)
	}
	if n := h.forbidHits.Load(); n != 0 {
		t.Errorf("the forbidden server was reached %d times", n)
		h.result(t, hostileCase{name: "forbidden server never reached", iface: "render", want: "0 requests"}, false, fmt.Sprintf("%d requests", n))
	} else {
		h.result(t, hostileCase{name: "forbidden server never reached", iface: "render", want: "0 requests"}, true, "")
	}
	// The workers survived all of it and still render.
	if live := c.live(); len(live) != 2 {
		t.Errorf("%d of 2 workers still run", len(live))
	}
	after := c.enqueue("after hostile", request("hostile-after", 0))
	c.waitAll([]*export{after}, 60*time.Second)
	c.verdict(sc, []*export{after})
	sc.Notes = "rejections: see the hostile-input table"
}

func (h *hostileEnv) result(t *testing.T, hc hostileCase, ok bool, got string) {
	t.Helper()
	recorder.Hostile(Hostile{Name: hc.name, Interface: hc.iface, Want: hc.want, Passed: ok, Got: got})
	if !ok {
		t.Errorf("%s %q: want %s, got %s", hc.iface, hc.name, hc.want, got)
	}
}

// pdfText returns pdftotext's text of a stored artifact (file:// URL).
func (h *hostileEnv) pdfText(url string) (string, error) {
	pdf := pdfcheck.Poppler{Path: strings.TrimPrefix(url, "file://")}
	if _, err := pdf.Pages(context.Background()); err != nil {
		return "", err
	}
	return pdf.Text(context.Background(), pdfcheck.Reading, pdfcheck.AllPages, pdfcheck.AllPages)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
