package export_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
)

func shotPayload(s *spec.Screenshot) spec.Request {
	return spec.Request{V: 1, ManualID: "acme", Version: "shot", Source: spec.RequestSource{HTML: `<p id="x">Shot</p>`},
		Options: spec.Options{Screenshot: s}}
}

// TestExport_Screenshots: a screenshot is an export like a PDF: rendered
// once and stored under a key of its format's extension, a PNG and a
// JPEG of one page two artifacts, a repeat reused as one page; a selector
// of no element fails for good, naming it.
func TestExport_Screenshots(t *testing.T) {
	e := startEnv(t, 1)
	// The test's workers announce nothing; they serve version 4.
	c, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: e.queue.Addr()}, MaxRetry: 2,
		OlderWorkers: exportclient.AllowOlderWorkers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	e.client = c
	png := e.export(t, shotPayload(&spec.Screenshot{}))
	jpeg := e.export(t, shotPayload(&spec.Screenshot{Format: "jpeg", Quality: new(60)}))
	again := e.export(t, shotPayload(&spec.Screenshot{Format: "png"}))
	for name, c := range map[string]struct {
		st       exportclient.Status
		ext      string
		magic    string
		rendered bool
	}{"png": {png, ".png", "\x89PNG", true}, "jpeg": {jpeg, ".jpeg", "\xff\xd8\xff", true}, "png again": {again, ".png", "\x89PNG", false}} {
		r := c.st.Result
		if c.st.State != exportclient.StateCompleted || r == nil {
			t.Fatalf("%s: %+v", name, c.st)
		}
		if !strings.HasSuffix(r.ArtifactKey, c.ext) || r.Rendered != c.rendered || r.Pages != 1 {
			t.Errorf("%s: key %s rendered %v pages %d, want %s, rendered %v, one page", name, r.ArtifactKey, r.Rendered, r.Pages, c.ext, c.rendered)
		}
		files, err := storage.NewFile(e.dir, "")
		if err != nil {
			t.Fatal(err)
		}
		rc, err := files.Open(context.Background(), r.ArtifactKey)
		if err != nil {
			t.Fatal(err)
		}
		head, _ := io.ReadAll(io.LimitReader(rc, 4))
		rc.Close()
		if !bytes.HasPrefix(head, []byte(c.magic)) {
			t.Errorf("%s: stored %q, want an image starting %q", name, head, c.magic)
		}
	}
	if png.Result.ArtifactKey == jpeg.Result.ArtifactKey || again.Result.ArtifactKey != png.Result.ArtifactKey {
		t.Errorf("keys %s %s %s: want the PNG's twice and the JPEG's apart", png.Result.ArtifactKey, jpeg.Result.ArtifactKey, again.Result.ArtifactKey)
	}
	missing := e.export(t, shotPayload(&spec.Screenshot{Selector: "#nope"}))
	if missing.State != exportclient.StateFailed || missing.Retried != 0 || !strings.Contains(missing.Error, "the selector '#nope' matched no element") {
		t.Errorf("a selector of no element: %s retried %d %q, want failed for good naming it", missing.State, missing.Retried, missing.Error)
	}
}
