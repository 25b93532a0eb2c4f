package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

func TestParseChapters(t *testing.T) {
	for _, c := range []struct {
		name, file string
		want       []exportclient.Chapter
		err        string
	}{
		{name: "urls, titles, revisions, comments", file: "# the tutorial\nhttps://d.example/a.html Whetting Your Appetite\n\n  https://d.example/b.html rev=r7 Using the Interpreter \nhttps://d.example/c.html rev=3\nhttps://d.example/d.html\n",
			want: []exportclient.Chapter{
				{URL: "https://d.example/a.html", Title: "Whetting Your Appetite"},
				{URL: "https://d.example/b.html", Title: "Using the Interpreter", Revision: "r7"},
				{URL: "https://d.example/c.html", Revision: "3"},
				{URL: "https://d.example/d.html"},
			}},
		{name: "empty", file: "# nothing\n\n", err: "lists no chapter"},
		{name: "rev without value", file: "https://d.example/a.html rev= Title\n", err: "line 1: rev= names no revision"},
		{name: "too many", file: strings.Repeat("https://d.example/a.html\n", 1001), err: "line 1001: more than 1000 chapters"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseChapters([]byte(c.file))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("chapter %d = %+v, want %+v", i, got[i], c.want[i])
				}
			}
		})
	}
}

// TestExport_ChaptersFileQueuesAManual: --chapters and --toc queue the
// manual the file lists, in order, with titles and revisions; a bad file
// is exit 2 naming the line.
func TestExport_ChaptersFileQueuesAManual(t *testing.T) {
	srv := testsupport.StartRedis(t)
	environ := []string{"REDIS_URL=" + srv.URL(), "ALLOWED_HOSTS=docs.example.com"}
	dir := t.TempDir()
	list := filepath.Join(dir, "chapters.txt")
	if err := os.WriteFile(list, []byte("# the tutorial\nhttps://docs.example.com/py/appetite.html rev=4f2a Whetting Your Appetite\nhttps://docs.example.com/py/interpreter.html\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, environ, "export", "--manual", "py-tutorial", "--version", "3.13", "--chapters", list, "--toc", "--outline", "--json")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var out struct {
		TaskID string `json:"task_id"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	insp := asynq.NewInspector(asynq.RedisClientOpt{Addr: srv.Addr()})
	t.Cleanup(func() { _ = insp.Close() })
	info, err := insp.GetTaskInfo("default", out.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	env, err := spec.DecodeEnvelope(info.Payload)
	if err != nil {
		t.Fatal(err)
	}
	want := []spec.Chapter{
		{URL: "https://docs.example.com/py/appetite.html", Title: "Whetting Your Appetite", Revision: "4f2a"},
		{URL: "https://docs.example.com/py/interpreter.html"},
	}
	if len(env.Source.Chapters) != 2 || env.Source.Chapters[0] != want[0] || env.Source.Chapters[1] != want[1] || !env.Options.TOC {
		t.Fatalf("queued %+v (toc %v), want %+v with toc", env.Source.Chapters, env.Options.TOC, want)
	}

	if err := os.WriteFile(list, []byte("https://elsewhere.example/a.html\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := runCLI(t, environ, "export", "--manual", "m", "--version", "1", "--chapters", list)
	if bad.code != exitInvalid || !strings.Contains(bad.stderr, "source.chapters[0].url") {
		t.Fatalf("a chapter off ALLOWED_HOSTS: exit %d, %s", bad.code, bad.stderr)
	}
	both := runCLI(t, environ, "export", "--manual", "m", "--version", "1", "--chapters", list, "--url", "https://docs.example.com/x")
	if both.code != exitInvalid || !strings.Contains(both.stderr, "--chapters") {
		t.Fatalf("--chapters with --url: exit %d, %s", both.code, both.stderr)
	}
}

// TestReadBatch_ChaptersRows: a batch row whose url is chapters:PATH
// exports the manual PATH lists; a missing file is a bad row naming its
// line, and the other rows go on.
func TestReadBatch_ChaptersRows(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "tutorial.txt")
	if err := os.WriteFile(list, []byte("https://docs.example.com/a.html rev=1 A\nhttps://docs.example.com/b.html\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	csv := "manual_id,version,url\nops,1,https://docs.example.com/ops.html\npy,3.13,chapters:" + list + "\ngone,1,chapters:" + filepath.Join(dir, "missing.txt") + "\n"
	rows, total, bad := readBatch(strings.NewReader(csv), exportclient.Options{}, false)
	if total != 3 || len(rows) != 2 || len(bad) != 1 || !strings.Contains(bad[0], "line 4: chapters file") {
		t.Fatalf("rows %+v, total %d, bad %v", rows, total, bad)
	}
	if rows[0].req.URL == "" || rows[0].req.Chapters != nil {
		t.Errorf("a url row became %+v", rows[0].req)
	}
	if r := rows[1].req; r.URL != "" || len(r.Chapters) != 2 || r.Chapters[0].Title != "A" || r.Chapters[0].Revision != "1" {
		t.Errorf("the chapters row became %+v", r)
	}
}

// TestExport_AccessibleManualFlags: --pdf-ua, --pdf-a and --lang queue a
// manual of envelope version 3 asking for them; without --chapters they
// are refused, naming the field.
func TestExport_AccessibleManualFlags(t *testing.T) {
	srv := testsupport.StartRedis(t)
	environ := []string{"REDIS_URL=" + srv.URL(), "ALLOWED_HOSTS=docs.example.com"}
	list := filepath.Join(t.TempDir(), "chapters.txt")
	if err := os.WriteFile(list, []byte("https://docs.example.com/a.html\nhttps://docs.example.com/b.html\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, environ, "export", "--manual", "m", "--version", "1", "--chapters", list, "--pdf-ua", "--pdf-a", "2b", "--lang", "de-CH", "--json")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var out struct {
		TaskID string `json:"task_id"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	insp := asynq.NewInspector(asynq.RedisClientOpt{Addr: srv.Addr()})
	t.Cleanup(func() { _ = insp.Close() })
	info, err := insp.GetTaskInfo("default", out.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	env, err := spec.DecodeEnvelope(info.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if o := env.Options; env.V != 3 || !o.PDFUA || o.PDFA != "2b" || o.Lang != "de-CH" {
		t.Fatalf("queued v%d with %+v; want version 3 asking for pdf_ua, pdf_a 2b and de-CH", env.V, o)
	}
	page := runCLI(t, environ, "export", "--manual", "m", "--version", "1", "--url", "https://docs.example.com/a.html", "--pdf-a", "2b")
	if page.code != exitInvalid || !strings.Contains(page.stderr, "options.pdf_a") {
		t.Fatalf("--pdf-a of a single page: exit %d, %s", page.code, page.stderr)
	}
}
