package worker

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/testing/harness"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// newSecretsKey is a fresh SECRETS_KEY entry.
func newSecretsKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// monitor records every command Redis at addr executes (MONITOR, on a
// connection of its own) until the test ends.
type monitor struct {
	lines harness.SyncBuffer
}

func startMonitor(t *testing.T, addr string) *monitor {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	if ok, err := r.ReadString('\n'); err != nil || ok != "+OK\r\n" {
		t.Fatalf("MONITOR answered %q, %v", ok, err)
	}
	m := &monitor{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // ends when the cleanup closes conn
		defer wg.Done()
		for {
			line, err := r.ReadString('\n')
			_, _ = m.lines.Write([]byte(line))
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { _ = conn.Close(); wg.Wait() })
	return m
}

// TestWorker_SecretsAreSealedInRedis: with SECRETS_KEY on the enqueuer and
// the worker, an export of a private page with per-export credentials (a
// header and a cookie) and encryption passwords renders as that user and
// opens with that password, while neither the MONITOR stream (the enqueue,
// the worker's reads, the release) nor the stored values (GET, HGETALL,
// DUMP) nor any Redis value ever shows a secret.
func TestWorker_SecretsAreSealedInRedis(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("pdftotext"); err != nil {
		t.Fatal("pdftotext is missing (make setup installs poppler-utils)")
	}
	const headerSecret, cookieSecret = "HeaderSecret-2d61f0", "CookieSecret-a93e47"
	const userPW, ownerPW = "UserSecret-5be1c2", "OwnerSecret-0f7d88"
	secrets := []string{headerSecret, cookieSecret, userPW, ownerPW}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("sid")
		if err != nil || c.Value != cookieSecret || r.Header.Get("X-Portal-Key") != headerSecret {
			http.Error(w, "login required", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, "<!doctype html><title>portal</title><h1>SEALED-USER-VIEW</h1>")
	}))
	t.Cleanup(site.Close)
	host := strings.TrimPrefix(site.URL, "http://")
	redis := testsupport.StartRedis(t)
	rdb := redis.Client()
	mon := startMonitor(t, redis.Addr())
	key := newSecretsKey(t)
	cfg := loadConfig(t, "REDIS_URL="+redis.URL(), "STORAGE_URL=file://"+t.TempDir(), "ADMIN_ADDR=",
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "ALLOWED_HOSTS="+host, "SECRETS_KEY="+key, "LOG_LEVEL=debug")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, AllowedHosts: host, SecretsKey: key})

	// Enqueued before a worker runs, so the stored values can be read.
	job, err := c.Enqueue(ctx, exportclient.Request{ManualID: "sealed", Version: "1", URL: site.URL + "/manual",
		Headers: map[string]string{"X-Portal-Key": headerSecret}, Cookies: []exportclient.Cookie{{Name: "sid", Value: cookieSecret}},
		Options: exportclient.Options{Encryption: &exportclient.Encryption{UserPassword: userPW, OwnerPassword: ownerPW}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"pdfexport:credentials:{" + job.TaskID + "}", "pdfexport:passwords:{" + job.TaskID + "}"} {
		fields, err := rdb.HGetAll(ctx, k).Result()
		if err != nil || !strings.HasPrefix(fields["data"], "sealed:v1:") {
			t.Fatalf("HGETALL %s = %v, %v; want a sealed value", k, fields, err)
		}
		dump, err := rdb.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets {
			if strings.Contains(fields["data"], s) || strings.Contains(dump, s) {
				t.Errorf("%s shows the secret %s (HGETALL or DUMP)", k, s)
			}
		}
	}
	testsupport.AssertRedisHoldsNo(t, rdb, secrets...)

	var logs harness.SyncBuffer
	startWorker(t, cfg, Options{Logger: debugLogger(&logs)})
	st, err := c.Wait(ctx, job.TaskID, 0)
	if err != nil || st.State != exportclient.StateCompleted {
		t.Fatalf("Wait = %+v, %v", st, err)
	}
	path := strings.TrimPrefix(st.Result.URL, "file://")
	if text, _ := tool(t, false, "pdftotext", "-upw", userPW, path, "-"); !strings.Contains(text, "SEALED-USER-VIEW") {
		t.Errorf("the PDF (opened with the user password) shows %q, want the user's view", text)
	}
	if _, err := tool(t, true, "pdftotext", path, "-"); err == nil {
		t.Error("the PDF opens without its user password")
	}
	if strings.Contains(logs.String(), "SECRETS_KEY is not set") || !strings.Contains(logs.String(), "per-export secrets in Redis are sealed") {
		t.Errorf("the worker's start does not say its secrets are sealed:\n%.3000s", logs.String())
	}

	// Everything Redis executed until now has been read by the monitor.
	marker := "monitor-sync-" + job.TaskID
	testsupport.Eventually(t, 10*time.Second, func() error {
		if err := rdb.Echo(ctx, marker).Err(); err != nil {
			return err
		}
		return testsupport.Unless(strings.Contains(mon.lines.String(), marker), "the monitor has not seen %s yet", marker)
	})
	stream := mon.lines.String()
	if !strings.Contains(stream, `"pdfexport:credentials:{`+job.TaskID+`}"`) || !strings.Contains(stream, `"pdfexport:passwords:{`+job.TaskID+`}"`) {
		t.Fatalf("the monitor did not see the secrets stored; the test proves nothing:\n%.2000s", stream)
	}
	for _, s := range secrets {
		if strings.Contains(stream, s) {
			i := strings.Index(stream, s)
			t.Errorf("MONITOR shows the secret %s: …%s…", s, stream[max(0, i-200):min(len(stream), i+100)])
		}
	}
	testsupport.AssertRedisHoldsNo(t, rdb, secrets...)
}

// TestWorker_SealedSecrets: what a worker does with secrets sealed (or not)
// by the enqueuer. It opens them after a rotation (a new key prepended on
// the worker) and reads clear ones queued before SECRETS_KEY was set; one
// it cannot open (no key, not the sealing key, a byte changed in Redis)
// fails the export for good on its first attempt, the error naming the
// field and why, never a secret. A worker without SECRETS_KEY warns once,
// at start, that secrets in Redis are not sealed.
func TestWorker_SealedSecrets(t *testing.T) {
	t.Parallel()
	const cookieSecret, userPW, ownerPW = "CookieSecret-71c0e9", "UserSecret-e2a54b", "OwnerSecret-3c9d1f"
	oldKey, newKey := newSecretsKey(t), newSecretsKey(t)
	for _, tt := range []struct {
		name                 string
		enqueuerKey, workKey string
		passwordsOnly        bool
		tamper               string // the Redis key whose sealed value gets a byte changed
		want                 string // "" completes; otherwise words of the task's error
	}{
		{name: "rotated", enqueuerKey: oldKey, workKey: newKey + " " + oldKey},
		{name: "clear, queued before the key", workKey: newKey},
		{name: "worker without the key", enqueuerKey: oldKey, want: "source.credentials_ref: the export's credentials are sealed and cannot be opened: it is sealed (key id"},
		{name: "sealing key dropped", enqueuerKey: oldKey, workKey: newKey, passwordsOnly: true, want: "encryption_ref: the export's passwords are sealed and cannot be opened: it is sealed with key id"},
		{name: "tampered", enqueuerKey: oldKey, workKey: oldKey, tamper: "pdfexport:credentials:", want: "source.credentials_ref: the export's credentials are sealed and cannot be opened: it does not authenticate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			redis := testsupport.StartRedis(t)
			rdb := redis.Client()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, SecretsKey: tt.enqueuerKey})
			req := exportclient.Request{ManualID: "m", Version: "1", HTML: "<p>sealed",
				Options: exportclient.Options{Encryption: &exportclient.Encryption{UserPassword: userPW, OwnerPassword: ownerPW}}}
			if !tt.passwordsOnly {
				// Credentials go with a URL; the stub renderer never loads it.
				req.HTML, req.URL = "", "https://docs.example.com/manual"
				req.Cookies = []exportclient.Cookie{{Name: "sid", Value: cookieSecret}}
				c = newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, SecretsKey: tt.enqueuerKey, AllowedHosts: "docs.example.com"})
			}
			job, err := c.Enqueue(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if tt.tamper != "" {
				k := tt.tamper + "{" + job.TaskID + "}"
				v := rdb.HGet(ctx, k, "data").Val()
				i, b := len(v)-8, byte('A') // inside the GCM tag, still base64
				if v[i] == b {
					b = 'B'
				}
				rdb.HSet(ctx, k, "data", v[:i]+string(b)+v[i+1:])
			}
			env := []string{"REDIS_URL=" + redis.URL(), "STORAGE_URL=file://" + t.TempDir(), "ADMIN_ADDR=", "ALLOWED_HOSTS=docs.example.com"}
			if tt.workKey != "" {
				env = append(env, "SECRETS_KEY="+tt.workKey)
			}
			var logs harness.SyncBuffer
			startWorker(t, loadConfig(t, env...), Options{Renderer: stubRenderer{pdf: onePagePDF(t)}, Logger: debugLogger(&logs)})
			st, err := c.Wait(ctx, job.TaskID, 0)
			if err != nil {
				t.Fatal(err)
			}
			if n, want := strings.Count(logs.String(), "SECRETS_KEY is not set"), map[bool]int{true: 1}[tt.workKey == ""]; n != want {
				t.Errorf("the worker warned %d times that secrets are unsealed, want %d", n, want)
			}
			switch {
			case tt.want == "" && st.State != exportclient.StateCompleted:
				t.Fatalf("%+v; want completed", st)
			case tt.want != "" && (st.State != exportclient.StateFailed || st.Retried != 0 || !strings.Contains(st.Error, tt.want)):
				t.Fatalf("%+v; want failed on the first attempt, the error saying %q", st, tt.want)
			}
			for _, s := range []string{cookieSecret, userPW, ownerPW} {
				if strings.Contains(st.Error, s) {
					t.Errorf("the task's error shows the secret %s: %s", s, st.Error)
				}
			}
		})
	}
}
