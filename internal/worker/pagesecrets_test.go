package worker

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// pageSecretsRequest is an export of url sending a page header and a page
// cookie (options.page, what Gotenberg's extraHttpHeaders and cookies
// become).
func pageSecretsRequest(url, host, header, cookie string) exportclient.Request {
	return exportclient.Request{ManualID: "page-secrets", Version: "1", URL: url,
		Options: exportclient.Options{Page: &exportclient.PageOptions{
			Headers: []exportclient.ScopedHeader{{Name: "X-Page-Key", Value: header}},
			Cookies: []exportclient.PageCookie{{Name: "psid", Value: cookie, Domain: strings.Split(host, ":")[0]}}}}}
}

// TestWorker_PageSecretsAreSealed: options.page's headers and cookies
// travel beside the task, sealed with SECRETS_KEY: the queued payload and
// every Redis value lack them, the page still gets them, and what was
// stored is released once the export is final.
func TestWorker_PageSecretsAreSealed(t *testing.T) {
	t.Parallel()
	const headerSecret, cookieSecret = "PageHeaderSecret-5a1c", "PageCookieSecret-9e02"
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("psid")
		if err != nil || c.Value != cookieSecret || r.Header.Get("X-Page-Key") != headerSecret {
			http.Error(w, "login required", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, "<!doctype html><title>portal</title><h1>PAGE-USER-VIEW</h1>")
	}))
	t.Cleanup(site.Close)
	host := strings.TrimPrefix(site.URL, "http://")
	redis := testsupport.StartRedis(t)
	rdb := redis.Client()
	key := newSecretsKey(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, AllowedHosts: host, SecretsKey: key})
	job, err := c.Enqueue(ctx, pageSecretsRequest(site.URL+"/manual", host, headerSecret, cookieSecret))
	if err != nil {
		t.Fatal(err)
	}
	info, err := asynq.NewInspector(asynq.RedisClientOpt{Addr: redis.Addr()}).GetTaskInfo(job.Queue, job.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	payload := string(info.Payload)
	if !strings.Contains(payload, `"page_secrets_ref"`) {
		t.Fatalf("the payload names no page_secrets_ref: %s", payload)
	}
	for _, s := range []string{headerSecret, cookieSecret} {
		if strings.Contains(payload, s) {
			t.Errorf("the queued payload shows the secret %s: %s", s, payload)
		}
	}
	side := "pdfexport:page-secrets:{" + job.TaskID + "}"
	if fields, err := rdb.HGetAll(ctx, side).Result(); err != nil || !strings.HasPrefix(fields["data"], "sealed:v1:") {
		t.Fatalf("HGETALL %s = %v, %v; want a sealed value", side, fields, err)
	}
	testsupport.AssertRedisHoldsNo(t, rdb, headerSecret, cookieSecret)

	cfg := loadConfig(t, "REDIS_URL="+redis.URL(), "STORAGE_URL=file://"+t.TempDir(), "ADMIN_ADDR=",
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "ALLOWED_HOSTS="+host, "SECRETS_KEY="+key)
	startWorker(t, cfg, Options{})
	st, err := c.Wait(ctx, job.TaskID, 0)
	if err != nil || st.State != exportclient.StateCompleted {
		t.Fatalf("Wait = %+v, %v", st, err)
	}
	path := strings.TrimPrefix(st.Result.URL, "file://")
	if text, _ := tool(t, false, "pdftotext", path, "-"); !strings.Contains(text, "PAGE-USER-VIEW") {
		t.Errorf("the PDF shows %q, want the view the header and cookie open", text)
	}
	testsupport.Eventually(t, 10*time.Second, func() error {
		n, err := rdb.Exists(ctx, side).Result()
		if err != nil {
			return err
		}
		return testsupport.Unless(n == 0, "%s is still stored after the export is final", side)
	})
	testsupport.AssertRedisHoldsNo(t, rdb, headerSecret, cookieSecret)
}

// TestEnqueue_PageSecretsKey: the artifact key hashes the keyed identity
// of the page's headers and cookies: other values give another key, the
// same ones in another order the same key.
func TestEnqueue_PageSecretsKey(t *testing.T) {
	t.Parallel()
	redis := testsupport.StartRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, AllowedHosts: "docs.example.com"})
	enqueue := func(cookies ...exportclient.PageCookie) string {
		t.Helper()
		req := pageSecretsRequest("https://docs.example.com/m", "docs.example.com", "h", "x")
		req.Options.Page.Cookies = cookies
		job, err := c.Enqueue(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return job.ArtifactKey
	}
	a := exportclient.PageCookie{Name: "a", Value: "one", Domain: "docs.example.com"}
	b := exportclient.PageCookie{Name: "b", Value: "two", Domain: "docs.example.com"}
	other := a
	other.Value = "another"
	ab, ba, otherB := enqueue(a, b), enqueue(b, a), enqueue(other, b)
	if ab != ba {
		t.Errorf("the same cookies in another order: keys %s and %s, want one", ab, ba)
	}
	if ab == otherB {
		t.Errorf("another cookie value shares the key %s", ab)
	}
}

// TestWorker_PageSecretsWrongKey: page secrets sealed with a key the
// worker lacks fail the export for good, naming page_secrets_ref,
// never showing a secret.
func TestWorker_PageSecretsWrongKey(t *testing.T) {
	t.Parallel()
	const cookieSecret = "PageCookieSecret-3f4b"
	redis := testsupport.StartRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, SecretsKey: newSecretsKey(t), AllowedHosts: "docs.example.com"})
	job, err := c.Enqueue(ctx, pageSecretsRequest("https://docs.example.com/m", "docs.example.com", "h", cookieSecret))
	if err != nil {
		t.Fatal(err)
	}
	cfg := loadConfig(t, "REDIS_URL="+redis.URL(), "STORAGE_URL=file://"+t.TempDir(), "ADMIN_ADDR=",
		"ALLOWED_HOSTS=docs.example.com", "SECRETS_KEY="+newSecretsKey(t))
	startWorker(t, cfg, Options{Renderer: stubRenderer{pdf: onePagePDF(t)}})
	st, err := c.Wait(ctx, job.TaskID, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := "page_secrets_ref: the export's page headers and cookies are sealed and cannot be opened"
	if st.State != exportclient.StateFailed || st.Retried != 0 || !strings.Contains(st.Error, want) {
		t.Fatalf("%+v; want failed on the first attempt, the error saying %q", st, want)
	}
	if strings.Contains(st.Error, cookieSecret) {
		t.Errorf("the task's error shows the secret: %s", st.Error)
	}
}
