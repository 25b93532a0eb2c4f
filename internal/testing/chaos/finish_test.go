package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/tasks/outcome"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// callbackSecret is the scenario's CALLBACK_SECRET (whsec_ and base64).
const callbackSecret = "whsec_Y2hhb3MtZmluaXNoLXJlZHJpdmUta2V5LTAx"

// receiver is a real webhook receiver: it verifies each delivery's
// signature and records its webhook-id and body.
type receiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []struct{ id, body string }
	bad []error
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		if err := exportclient.VerifyCallback(req.Header, body, callbackSecret); err != nil {
			r.bad = append(r.bad, err)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		r.got = append(r.got, struct{ id, body string }{req.Header.Get(exportclient.HeaderWebhookID), string(body)})
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// byID returns the bodies delivered with webhook-id id.
func (r *receiver) byID(id string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, d := range r.got {
		if d.id == id {
			out = append(out, d.body)
		}
	}
	return out
}

// finisherACL is the worker's Redis user while the fault lasts: every key
// but the task hashes of callbacks (asynq:{<queue>}:t:callback-…), so that
// Redis refuses exactly the callback's enqueue (NOPERM) while the export,
// its record and its release go through. ACL key patterns only allow, so
// the refused prefix is spelt out letter by letter.
func finisherACL(user, password string) []any {
	args := []any{"ACL", "SETUSER", user, "reset", "on", ">" + password, "+@all", "&*",
		"~pdfexport:*", "~{pdfexport:*", "~asynq:[^{]*", "~asynq:{*}:[^t]*", "~asynq:{*}:t", "~asynq:{*}:t:[^c]*"}
	const refused = "callback-"
	for i := 1; i < len(refused); i++ {
		args = append(args, "~asynq:{*}:t:"+refused[:i]+"[^"+refused[i:i+1]+"]*")
	}
	return args
}

// TestChaos_FinishReDrivenAfterTheRecord (scenario 10): the worker that
// completes an export records its final state, then Redis refuses the
// callback's enqueue (an ACL that denies exactly that key: a real Redis
// error at that step), and the worker is SIGKILLed before anything could
// retry it. With Redis whole again, a new worker's sweep re-drives the
// steps after the record (RedriveAfter, 30 s): the callback reaches a real
// receiver, signed, exactly once by webhook-id, with the recorded body.
func TestChaos_FinishReDrivenAfterTheRecord(t *testing.T) {
	requireFull(t)
	sc := &Scenario{Name: "10 Redis refuses the callback enqueue after the record, worker SIGKILLed",
		Fault: "NOPERM on the callback's enqueue between the final record and the callback, then SIGKILL of the worker", Faults: 2}
	record(t, sc)
	hooks := newReceiver(t)
	hookHost := strings.TrimPrefix(hooks.srv.URL, "http://")
	c := newCluster(t, clusterConfig{Workers: 0, Env: []string{"CALLBACK_ALLOWED_HOSTS=" + hookHost, "CALLBACK_SECRET=" + callbackSecret,
		"REDIS_USERNAME=finisher", "REDIS_PASSWORD=finisher-pw"}})
	c.countLeaks(sc)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.rdb.Do(ctx, finisherACL("finisher", "finisher-pw")...).Err(); err != nil {
		t.Fatal(err)
	}
	w1 := c.startWorker()
	client, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: c.redis.Addr()}, CallbackAllowedHosts: hookHost, Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	req := request("s10-redrive", 0)
	req.CallbackURL = hooks.srv.URL + "/pdf-ready"
	job, err := client.Enqueue(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	e := &export{label: "s10-redrive", key: job.ArtifactKey, taskID: job.TaskID}
	waitLog(t, []*worker{w1}, "finishing the export failed", 60*time.Second)
	rec, ok, err := outcome.Recorded(ctx, c.rdb, job.TaskID)
	if err != nil || !ok || rec.State != "completed" {
		t.Fatalf("the record before the kill: %+v %v %v", rec, ok, err)
	}
	if !strings.Contains(w1.Output(), "NOPERM") {
		t.Errorf("the worker's Finish did not fail on the ACL:\n%s", w1.Tail(3000))
	}
	c.crash(w1)
	killedAt := time.Now()
	if n := c.rdb.Exists(ctx, "asynq:{default}:t:"+outcome.CallbackTaskID(job.TaskID)).Val(); n != 0 {
		t.Fatal("the callback task exists: the fault did not hit")
	}

	if err := c.rdb.Do(ctx, "ACL", "SETUSER", "finisher", "allkeys").Err(); err != nil { // Redis whole again
		t.Fatal(err)
	}
	c.startWorker()
	id := outcome.CallbackTaskID(job.TaskID)
	testsupport.Eventually(t, 120*time.Second, func() error {
		return testsupport.Unless(len(hooks.byID(id)) > 0, "no callback %s at the receiver %v after the kill", id, time.Since(killedAt).Round(time.Second))
	})
	arrived := time.Since(killedAt)
	time.Sleep(8 * time.Second) // a second delivery would come now (sweeps every 5 s)
	got := hooks.byID(id)
	if len(got) != 1 {
		t.Errorf("%d deliveries with webhook-id %s, want exactly 1", len(got), id)
	}
	var body exportclient.Final
	if err := json.Unmarshal([]byte(got[0]), &body); err != nil || body.State != "completed" || body.TaskID != job.TaskID {
		t.Errorf("callback body %s (%v), want the recorded completed", got[0], err)
	}
	hooks.mu.Lock()
	if len(hooks.bad) > 0 {
		t.Errorf("deliveries with a bad signature: %v", hooks.bad)
	}
	hooks.mu.Unlock()
	if n := c.rdb.ZCard(ctx, keyspace.FinishingIndex).Val(); n != 0 {
		t.Errorf("%d exports still to re-drive", n)
	}
	c.waitAll([]*export{e}, 30*time.Second)
	c.verdict(sc, []*export{e})
	sc.Notes = fmt.Sprintf("callback delivered once, %v after the kill (RedriveAfter 30 s, sweep every 5 s)", arrived.Round(time.Second))
}
