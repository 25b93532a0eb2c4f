package exportclient_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/harness"
)

// Enqueue an export and wait for its PDF. Wait returns when the export is
// final: a worker (bin/worker) must be serving the queues, so this example
// is compiled but not run by go test.
func Example() {
	c, err := exportclient.New(exportclient.Config{
		Redis:        asynq.RedisClientOpt{Addr: "127.0.0.1:6379"}, // the workers' REDIS_URL
		AllowedHosts: "docs.example.com",                           // the workers' ALLOWED_HOSTS
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	job, err := c.Enqueue(ctx, exportclient.Request{
		ManualID: "ops-guide",
		Version:  "2026.11.3",
		URL:      "https://docs.example.com/ops-guide/2026.11.3/print",
		Options:  exportclient.Options{Paper: "Letter", Outline: true},
	})
	if errors.Is(err, exportclient.ErrInvalid) {
		log.Fatalf("bad request: %v", err) // the error names the field
	}
	if err != nil {
		log.Fatal(err) // exportclient.ErrUnavailable: Redis is down
	}
	fmt.Println("enqueued", job.TaskID, "for", job.ArtifactKey)

	st, err := c.Wait(ctx, job.TaskID, 0) // wakes on the worker's announcement
	if err != nil {
		log.Fatal(err) // ctx ended first; the export goes on, Status reads it later
	}
	switch st.State {
	case exportclient.StateCompleted:
		fmt.Println(st.Result.ArtifactKey, st.Result.Pages, "pages, download:", st.Result.URL)
	default: // failed or canceled
		fmt.Println(st.State, st.Error)
	}
}

// Cancel an export. This one was never taken by a worker (none is running),
// so it is archived at once and its status says canceled; canceling a final
// export again is ErrFinal.
func ExampleClient_Cancel() {
	c, err := exportclient.New(exportclient.Config{
		Redis: asynq.RedisClientOpt{Addr: exampleRedis()}, // e.g. "127.0.0.1:6379"
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()

	job, err := c.Enqueue(ctx, exportclient.Request{ManualID: "ops-guide", Version: "draft", HTML: "<h1>Draft</h1>"})
	if err != nil {
		log.Fatal(err)
	}
	st, err := c.Cancel(ctx, job.TaskID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("cancel:", st.State)

	st, err = c.Status(ctx, job.TaskID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("status:", st.State, "final:", st.Final())

	_, err = c.Cancel(ctx, job.TaskID)
	fmt.Println("again: ErrFinal?", errors.Is(err, exportclient.ErrFinal))
	// Output:
	// cancel: canceled
	// status: canceled final: true
	// again: ErrFinal? true
}

// Receive callbacks: verify the Standard Webhooks signature over the raw
// body before trusting it, answer 2xx, and drop a delivery seen before
// (callbacks arrive at least once; webhook-id is the same on every attempt).
// VerifyCallback takes CALLBACK_SECRET as it is: while a key rotates, the
// receiver holds both and accepts either.
func ExampleVerifyCallback() {
	secret := os.Getenv("CALLBACK_SECRET") // the workers' whsec_… entries
	if secret == "" {
		secret = exampleSecret
	}
	var seen sync.Map // webhook-ids already handled

	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		if err := exportclient.VerifyCallback(r.Header, body, secret); err != nil {
			// errors.Is(err, exportclient.ErrStale): replayed late;
			// exportclient.ErrNoMatchingSignature: forged or altered.
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		if _, dup := seen.LoadOrStore(r.Header.Get(exportclient.HeaderWebhookID), true); dup {
			w.WriteHeader(http.StatusNoContent) // handled already: acknowledge again
			return
		}
		var f exportclient.Final
		if err := json.Unmarshal(body, &f); err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		if exportclient.State(f.State) == exportclient.StateCompleted {
			fmt.Println("export", f.TaskID, "stored as", f.Result.ArtifactKey)
		} else {
			fmt.Println("export", f.TaskID, f.State+":", f.Error)
		}
		w.WriteHeader(http.StatusNoContent)
	})
	srv := httptest.NewServer(receiver)
	defer srv.Close()

	// What the workers send: the same body and webhook-id on every attempt.
	fmt.Println(deliver(srv.URL, exampleSecret, "callback-8d1c", exampleBody))
	fmt.Println(deliver(srv.URL, exampleSecret, "callback-8d1c", exampleBody)) // a retry
	forger := "whsec_" + base64.StdEncoding.EncodeToString([]byte("not the workers' key!"))
	fmt.Println(deliver(srv.URL, forger, "callback-8e2f", exampleBody)) // a forgery
	// Output:
	// export 8d1c stored as ops-guide/2026.11.3/58d7c1950555e961.pdf
	// 204 No Content
	// 204 No Content
	// 401 Unauthorized
}

// Receive callbacks with the Standard Webhooks reference library
// (github.com/standard-webhooks/standard-webhooks/libraries/go): a callback
// is an ordinary Standard Webhooks delivery. The library holds one key; a
// receiver in the middle of a rotation tries each (or uses VerifyCallback).
func Example_standardWebhooks() {
	wh, err := standardwebhooks.NewWebhook(exampleSecret) // one CALLBACK_SECRET entry
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err := wh.Verify(body, r.Header); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var f exportclient.Final
		_ = json.Unmarshal(body, &f)
		fmt.Println(r.Header.Get("webhook-id"), f.State)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	fmt.Println(deliver(srv.URL, exampleSecret, "callback-8d1c", exampleBody))
	// Output:
	// callback-8d1c completed
	// 204 No Content
}

// exampleSecret is a CALLBACK_SECRET entry, exampleBody a callback body.
const (
	exampleSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	exampleBody   = `{"task_id":"8d1c","state":"completed","manual_id":"ops-guide","version":"2026.11.3",` +
		`"result":{"artifact_key":"ops-guide/2026.11.3/58d7c1950555e961.pdf","pages":22},"retried":0}`
)

// deliver POSTs body to url signed with secret, as a worker delivers a
// callback, and returns the response status.
func deliver(url, secret, id, body string) string {
	keys, err := spec.ParseCallbackSecrets(secret)
	if err != nil {
		return err.Error()
	}
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	spec.SetCallbackHeaders(req.Header, keys, id, time.Now(), []byte(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	return resp.Status
}

// The runnable examples share one private redis-server, started on first
// use and stopped by TestMain when the package's tests end.
var (
	exampleRedisOnce sync.Once
	exampleRedisSrv  *harness.Redis
	exampleRedisDir  string
)

func exampleRedis() string {
	exampleRedisOnce.Do(func() {
		dir, err := os.MkdirTemp("", "exportclient-example-")
		if err != nil {
			log.Fatal(err)
		}
		exampleRedisDir = dir
		if exampleRedisSrv, err = harness.StartRedis(context.Background(), dir, 0); err != nil {
			log.Fatal(err)
		}
	})
	return exampleRedisSrv.Addr()
}

// redisExamples are the examples that run against a redis-server of their
// own: an example cannot skip itself, so under -short (which starts no
// server) TestMain leaves them out with -test.skip.
const redisExamples = "^ExampleClient_Cancel$"

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		skip := redisExamples
		if prev := flag.Lookup("test.skip").Value.String(); prev != "" {
			skip = prev + "|" + skip
		}
		if err := flag.Set("test.skip", skip); err != nil {
			log.Fatal(err)
		}
	}
	code := m.Run()
	if exampleRedisSrv != nil {
		exampleRedisSrv.Stop()
	}
	if exampleRedisDir != "" {
		_ = os.RemoveAll(exampleRedisDir)
	}
	os.Exit(code)
}

// Sign a reader's download link on the page that shows the manual: the
// reader's browser follows it without a token, until it expires.
// LINK_SECRET is bin/api's; the link names a manual of its MANUALS_FILE.
// The signature is fixed by key, path, query and expiry: this output pins
// the algorithm for signers in other languages.
func ExampleSignLink() {
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("32 bytes of the LINK_SECRET key."))
	link, err := exportclient.SignLink("https://pdf.example.com", secret, exportclient.Link{
		ManualID: "ops-guide", Version: "2026.11", Paper: "Letter",
		Expires: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("<a href=%q>Download PDF</a>\n", link)
	// Output:
	// <a href="https://pdf.example.com/v1/manuals/ops-guide/2026.11.pdf?expires=1796169600&paper=Letter&signature=UsTUargc5YFkjUm0_82HDyCHRnPlw3x-HWupnLutXSY">Download PDF</a>
}
