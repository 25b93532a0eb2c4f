package api

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/storage"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestGotenbergAuth: with a token, every Gotenberg route but /health
// refuses a request without it as Gotenberg's basic authentication does,
// and takes the token as the Basic password; /v1 keeps its own refusal.
// Under a root path the routes move, /health with them.
func TestGotenbergAuth(t *testing.T) {
	testsupport.SkipShort(t, "starts Redis")
	redis := testsupport.StartRedis(t)
	c, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, AllowedHosts: "docs.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	store, err := storage.Open(context.Background(), storage.Config{URL: "file://" + t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{"/", "/gb/"} {
		srv := httptest.NewServer(New(Config{Client: c, Token: "tok", Store: store, GotenbergRoot: root, Logger: slog.New(slog.DiscardHandler)}))
		t.Cleanup(srv.Close)
		for _, r := range []struct {
			method, path string
			open, authed int // without credentials, with the token as Basic password
		}{
			{"GET", "", 401, 200},
			{"GET", "favicon.ico", 401, 204},
			{"GET", "version", 401, 200},
			{"GET", "health", 200, 200},
			{"HEAD", "health", 200, 200},
			{"GET", "prometheus/metrics", 401, 200},
			{"GET", "debug", 401, 404},
			{"POST", "forms/chromium/convert/html", 401, 400},
			{"POST", "forms/chromium/screenshot/html", 401, 400},
			{"POST", "forms/pdfengines/factur-x", 401, 501},
			{"POST", "forms/pdfengines/merge", 401, 400},
			{"POST", "forms/libreoffice/convert", 401, 404},
		} {
			for _, authed := range []bool{false, true} {
				req, _ := http.NewRequest(r.method, srv.URL+root+r.path, nil)
				if authed {
					req.SetBasicAuth("anyone", "tok")
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				want := r.open
				if authed {
					want = r.authed
				}
				if resp.StatusCode != want {
					t.Errorf("%s %s%s authed=%v: %d %q, want %d", r.method, root, r.path, authed, resp.StatusCode, body, want)
				}
				if resp.StatusCode == 401 && (string(body) != "Unauthorized" || resp.Header.Get("WWW-Authenticate") != "basic realm=Restricted") {
					t.Errorf("%s %s%s: 401 %q %q, want Gotenberg's", r.method, root, r.path, body, resp.Header.Get("WWW-Authenticate"))
				}
			}
		}
		resp, err := http.Get(srv.URL + "/v1/exports/x")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != `Bearer realm="pdfexport"` {
			t.Errorf("/v1 without a token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
}
