package manuals

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

func rules(t *testing.T) Rules {
	t.Helper()
	hosts, err := allowlist.Parse("docs.example.com")
	if err != nil {
		t.Fatal(err)
	}
	return Rules{Hosts: spec.Hosts{Sources: hosts}, Queues: []string{"critical", "default", "batch"}}
}

const good = `
manuals:
  ops-guide:
    url: https://docs.example.com/{manual}/{version}/print
    options: {paper: A4, outline: true}
    allow_query: [paper, landscape]
  py-tutorial:
    chapters:
      - {url: "https://docs.example.com/py/{version}/tutorial/appetite.html", title: "Whetting Your Appetite ({version})"}
    options: {toc: true, outline: true, fast_web_view: true}
    links: public
    queue: batch
    versions: '3\.[0-9]+'
`

func TestParse_SubstitutesAndChecksQuery(t *testing.T) {
	reg, err := Parse([]byte(good), rules(t))
	if err != nil {
		t.Fatal(err)
	}
	ops, ok := reg.Get("ops-guide")
	if !ok || ops.Public() {
		t.Fatalf("ops-guide: %v %+v", ok, ops)
	}
	r, err := ops.Request("2026.11", url.Values{"paper": {"Letter"}, "landscape": {"true"}, "expires": {"1"}, "signature": {"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Source.URL != "https://docs.example.com/ops-guide/2026.11/print" || r.Options.Paper != "Letter" || !r.Options.Landscape || !r.Options.Outline {
		t.Errorf("request: %+v", r)
	}
	py, _ := reg.Get("py-tutorial")
	r, err = py.Request("3.13", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Source.Chapters[0]; c.URL != "https://docs.example.com/py/3.13/tutorial/appetite.html" || c.Title != "Whetting Your Appetite (3.13)" || !py.Public() || py.Queue != "batch" {
		t.Errorf("chapters: %+v", r.Source.Chapters)
	}
	if !r.Options.FastWebView || !r.Options.TOC || ops.Options.FastWebView {
		t.Errorf("a manual's fast_web_view setting: py-tutorial %v (want true), ops-guide %v (want false)", r.Options.FastWebView, ops.Options.FastWebView)
	}
	for _, tc := range []struct {
		query url.Values
		want  error
		names string
	}{
		{url.Values{"paper": {"Letter"}}, ErrUnknownParameter, "paper"},
		{url.Values{"foo": {"1"}}, ErrUnknownParameter, "foo"},
	} {
		if _, err := py.Request("3.13", tc.query); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.names) {
			t.Errorf("query %v: %v, want %v naming %s", tc.query, err, tc.want, tc.names)
		}
	}
	for _, v := range []string{"4.0", "3.13x", "x3.13"} {
		if _, err := py.Request(v, nil); !errors.Is(err, ErrUnknownVersion) {
			t.Errorf("version %s of py-tutorial (versions 3.N): %v", v, err)
		}
	}
	if _, err := ops.Request("1", url.Values{"landscape": {"maybe"}}); !errors.Is(err, ErrBadParameter) {
		t.Errorf("landscape=maybe: %v", err)
	}
}

// TestParse_BadEntriesNamed: every bad entry is reported with its manual's
// name and the field, and the file is refused.
func TestParse_BadEntriesNamed(t *testing.T) {
	for _, tc := range []struct {
		name, entry string
		want        []string
	}{
		{"host not allowed", `{url: "https://evil.example.net/{version}"}`, []string{"manual m", "source.url", "ALLOWED_HOSTS"}},
		{"no source", `{options: {paper: A4}}`, []string{"manual m", "source"}},
		{"both sources", `{url: "https://docs.example.com/", chapters: [{url: "https://docs.example.com/a"}]}`, []string{"manual m", "source"}},
		{"chapter host", `{chapters: [{url: "https://evil.example.net/a"}]}`, []string{"manual m", "source.chapters[0].url"}},
		{"bad option", `{url: "https://docs.example.com/", options: {paper: B7}}`, []string{"manual m", "options.paper"}},
		{"unknown option", `{url: "https://docs.example.com/", options: {papr: A4}}`, []string{"manual m", "options", "papr"}},
		{"unknown field", `{url: "https://docs.example.com/", colour: red}`, []string{"manual m", "colour"}},
		{"bad links", `{url: "https://docs.example.com/", links: open}`, []string{"manual m", "links"}},
		{"bad allow_query", `{url: "https://docs.example.com/", allow_query: [scale]}`, []string{"manual m", "allow_query", "scale"}},
		{"bad queue", `{url: "https://docs.example.com/", queue: nightly}`, []string{"manual m", "queue", "nightly"}},
		{"bad versions", `{url: "https://docs.example.com/", versions: "(["}`, []string{"manual m", "versions"}},
		{"encryption", `{url: "https://docs.example.com/", options: {encryption: {owner_password: x}}}`, []string{"manual m", "encryption"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "manuals:\n  ok: {url: \"https://docs.example.com/{version}\"}\n  m: " + tc.entry + "\n"
			_, err := Parse([]byte(doc), rules(t))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "manual ok") {
				t.Errorf("the good entry is blamed: %v", err)
			}
		})
	}
	if _, err := Parse([]byte("manual: {}"), rules(t)); err == nil {
		t.Error("a file without manuals: accepted")
	}
	// What a reload reads of a file being rewritten (truncated, then
	// written) must not take effect as an empty registry.
	for _, half := range []string{"", "\n", "manuals:\n", "manuals:\n  "} {
		if _, err := Parse([]byte(half), rules(t)); err == nil || !strings.Contains(err.Error(), "manuals") {
			t.Errorf("Parse(%q) = %v, want an error naming manuals", half, err)
		}
	}
	if reg, err := Parse([]byte("manuals: {}\n"), rules(t)); err != nil || reg.Len() != 0 {
		t.Errorf(`Parse("manuals: {}") = %v, %v; want an empty registry`, reg, err)
	}
}

// TestWatcher_Reloads: a changed file takes effect on the next poll and on
// SIGHUP; a broken one keeps the registry in force.
func TestWatcher_Reloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "manuals.yaml")
	write := func(doc string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("manuals:\n  a: {url: \"https://docs.example.com/a/{version}\"}\n")
	w, err := Open(path, rules(t), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	w.SetPollInterval(20 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	has := func(id string, want bool) func() error {
		return func() error {
			if _, ok := w.Current().Get(id); ok != want {
				return fmt.Errorf("manual %s present=%v, want %v", id, ok, want)
			}
			return nil
		}
	}
	write("manuals:\n  b: {url: \"https://docs.example.com/b/{version}\"}\n")
	testsupport.Eventually(t, 5*time.Second, has("b", true))
	testsupport.Eventually(t, time.Second, has("a", false))

	write("manuals:\n  c: {url: \"https://evil.example.net/\"}\n") // refused: b stays
	time.Sleep(100 * time.Millisecond)
	if err := has("b", true)(); err != nil {
		t.Fatal(err)
	}

	// SIGHUP reloads at once: with polling slowed to an hour, only the
	// signal can take the next change in.
	cancel()
	<-done
	w.SetPollInterval(time.Hour)
	ctx, cancel = context.WithCancel(context.Background())
	done = make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	write("manuals:\n  d: {url: \"https://docs.example.com/d/{version}\"}\n")
	time.Sleep(50 * time.Millisecond) // Run has registered for SIGHUP
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testsupport.Eventually(t, 5*time.Second, has("d", true))
}
