package api

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestAPI_LongPollIsNotHeldUpByAnother: with Redis slow to confirm the
// subscription the long-polls share (a proxy holds its replies back), a
// ?wait=1s started while another ?wait= is setting the subscription up
// answers after about its own wait, with the export's state.
func TestAPI_LongPollIsNotHeldUpByAnother(t *testing.T) {
	redis := testsupport.StartRedis(t)
	proxy := testsupport.StartSlowProxy(t, redis.Addr())
	srv := newTestAPI(t, proxy.Addr(), "")

	direct, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = direct.Close() })
	var ids []string
	for _, m := range []string{"first", "second"} {
		job, err := direct.Enqueue(context.Background(), exportclient.Request{ManualID: m, Version: "1", HTML: "<p>x"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, job.TaskID)
	}

	proxy.SetDelay(20 * time.Millisecond)
	proxy.SetSubscribeDelay(4 * time.Second)
	type answer struct {
		code int
		body map[string]any
		took time.Duration
	}
	get := func(id, wait string) answer {
		start := time.Now()
		code, body := do(t, "GET", srv.URL+"/v1/exports/"+id+"?wait="+wait, "", "")
		return answer{code, body, time.Since(start)}
	}
	first := make(chan answer, 1)
	go func() { first <- get(ids[0], "3s") }()
	time.Sleep(300 * time.Millisecond) // the first is subscribing

	second := get(ids[1], "1s")
	t.Logf("second ?wait=1s: %d %v after %s", second.code, second.body, second.took)
	if second.code != http.StatusOK || second.body["state"] != "pending" {
		t.Errorf("second ?wait=1s: %d %v, want 200 pending", second.code, second.body)
	}
	if second.took < 900*time.Millisecond || second.took > 1800*time.Millisecond {
		t.Errorf("second ?wait=1s answered after %s, want about 1s", second.took)
	}
	a := <-first
	if a.code != http.StatusOK || a.body["state"] != "pending" || a.took > 3800*time.Millisecond {
		t.Errorf("first ?wait=3s: %d %v after %s, want 200 pending after about 3s", a.code, a.body, a.took)
	}
}
