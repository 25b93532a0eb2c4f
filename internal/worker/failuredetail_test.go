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
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestWorker_RecordsWhatAFailureNames: a render that options.page fails
// is recorded with its kind and what it names (the check and its
// offenders, the main page's status, the selector), which a caller reads
// from the status without parsing the error's text.
func TestWorker_RecordsWhatAFailureNames(t *testing.T) {
	t.Parallel()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/gone":
			w.WriteHeader(http.StatusGone)
			fmt.Fprint(w, "<!doctype html><p>gone")
		case "/throws":
			fmt.Fprint(w, `<!doctype html><p>x<script>throw new Error("boom-4711")</script>`)
		default:
			fmt.Fprint(w, "<!doctype html><p>plain")
		}
	}))
	t.Cleanup(site.Close)
	host := strings.TrimPrefix(site.URL, "http://")
	redis := testsupport.StartRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, AllowedHosts: host})
	cfg := loadConfig(t, "REDIS_URL="+redis.URL(), "STORAGE_URL=file://"+t.TempDir(), "ADMIN_ADDR=",
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "ALLOWED_HOSTS="+host)
	startWorker(t, cfg, Options{})

	for _, tc := range []struct {
		name, path string
		opts       exportclient.Options
		kind       string
		check      func(d *exportclient.FailureDetail) error
	}{
		{"a console exception", "/throws", exportclient.Options{Page: &exportclient.PageOptions{FailOnConsoleExceptions: true}},
			spec.FailurePageErrors, func(d *exportclient.FailureDetail) error {
				return testsupport.Unless(d.Check == spec.FailedConsoleExceptions && len(d.Offenders) == 1 && strings.Contains(d.Offenders[0], "boom-4711"),
					"detail %+v, want the console exceptions check naming boom-4711", d)
			}},
		{"the main page's status", "/gone", exportclient.Options{Page: &exportclient.PageOptions{FailOnHTTPStatus: []int{410}}},
			spec.FailureHTTPStatus, func(d *exportclient.FailureDetail) error {
				return testsupport.Unless(d.Status == http.StatusGone && d.StatusText == "Gone", "detail %+v, want 410 Gone", d)
			}},
		{"a selector of no element", "/plain", exportclient.Options{Screenshot: &exportclient.Screenshot{Format: "png", Selector: "#nope"}},
			spec.FailureNoElement, func(d *exportclient.FailureDetail) error {
				return testsupport.Unless(d.Selector == "#nope", "detail %+v, want the selector #nope", d)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job, err := c.Enqueue(ctx, exportclient.Request{ManualID: "failure-detail", Version: strings.TrimPrefix(tc.path, "/"),
				URL: site.URL + tc.path, Options: tc.opts})
			if err != nil {
				t.Fatal(err)
			}
			st, err := c.Wait(ctx, job.TaskID, 0)
			if err != nil || st.State != exportclient.StateFailed {
				t.Fatalf("Wait = %+v, %v; want failed", st, err)
			}
			if st.Kind != tc.kind || st.Detail == nil {
				t.Fatalf("kind %q, detail %+v; want %q with its detail", st.Kind, st.Detail, tc.kind)
			}
			if err := tc.check(st.Detail); err != nil {
				t.Error(err)
			}
		})
	}
}
