package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/storage"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestBatch_200Rows: good rows are enqueued, stored artifacts are skipped,
// bad rows are reported with their line number and do not stop the rest.
func TestBatch_200Rows(t *testing.T) {
	srv := testsupport.StartRedis(t)
	dir := t.TempDir()
	store, err := storage.NewFile(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	var csv strings.Builder
	csv.WriteString("manual_id,version,url\n")
	badLines := map[int]string{}
	stored := 0
	for i := 1; i <= 200; i++ {
		line := i + 1
		switch {
		case i%50 == 0:
			fmt.Fprintf(&csv, "../evil,%d,https://docs.example.com/m%d\n", i, i)
			badLines[line] = "manual_id"
		case i%67 == 0:
			fmt.Fprintf(&csv, "m%d,1\n", i)
			badLines[line] = "3 columns"
		case i%40 == 0:
			fmt.Fprintf(&csv, "m%d,1,http://127.0.0.1:6379/\n", i)
			badLines[line] = "source.url"
		default:
			fmt.Fprintf(&csv, "m%d,1.0,https://docs.example.com/m%d/print\n", i, i)
			if i%10 == 0 { // already stored: the batch must skip it
				key := exportclient.Request{ManualID: fmt.Sprintf("m%d", i), Version: "1.0",
					URL: fmt.Sprintf("https://docs.example.com/m%d/print", i)}.Payload().ArtifactKey()
				if _, err := store.Create(context.Background(), key, strings.NewReader("%PDF-1.4"), storage.PutOptions{}); err != nil {
					t.Fatal(err)
				}
				stored++
			}
		}
	}
	environ := []string{"REDIS_URL=" + srv.URL(), "ALLOWED_HOSTS=docs.example.com", "STORAGE_URL=file://" + filepath.Clean(dir)}
	var stdout, stderr strings.Builder
	code := run(context.Background(), []string{"batch", "--file", "-", "--rate", "10000/s", "--progress", "lines"},
		environ, strings.NewReader(csv.String()), &stdout, &stderr)
	if code != exitFailed {
		t.Fatalf("exit %d, want %d (bad rows present)\nstdout: %s\nstderr: %s", code, exitFailed, stdout.String(), stderr.String())
	}
	for line, why := range badLines {
		want := fmt.Sprintf("line %d:", line)
		found := false
		for _, l := range strings.Split(stderr.String(), "\n") {
			if strings.HasPrefix(l, want) && strings.Contains(l, why) {
				found = true
			}
		}
		if !found {
			t.Errorf("stderr does not report %s (%s):\n%s", want, why, stderr.String())
		}
	}
	wantEnqueued := 200 - len(badLines) - stored
	wantSummary := fmt.Sprintf("200 rows: %d enqueued, %d already stored, %d bad rows, 0 enqueue errors", wantEnqueued, stored, len(badLines))
	if !strings.Contains(stdout.String(), wantSummary) {
		t.Fatalf("summary %q, want %q", stdout.String(), wantSummary)
	}
	insp := asynq.NewInspector(asynq.RedisClientOpt{Addr: srv.Addr()})
	t.Cleanup(func() { _ = insp.Close() })
	q, err := insp.GetQueueInfo("batch")
	if err != nil {
		t.Fatal(err)
	}
	if q.Pending != wantEnqueued {
		t.Fatalf("%d tasks pending on the batch queue, want %d", q.Pending, wantEnqueued)
	}
}
