package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// chaptersFileLimit bounds a --chapters file: a thousand long URLs with
// titles fit many times over.
const chaptersFileLimit = 4 << 20

// readChaptersFile reads and parses a chapters file at path.
func readChaptersFile(path string) ([]exportclient.Chapter, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, chaptersFileLimit+1))
	if err != nil {
		return nil, err
	}
	if len(b) > chaptersFileLimit {
		return nil, fmt.Errorf("larger than %d bytes", chaptersFileLimit)
	}
	return parseChapters(b)
}

// parseChapters reads a --chapters file: one chapter a line, in order,
//
//	URL [rev=REVISION] [title …]
//
// Blank lines and lines starting with # are skipped. A chapter without a
// revision is printed again for every version of the manual; with one, only
// when the revision changes.
func parseChapters(b []byte) ([]exportclient.Chapter, error) {
	var chapters []exportclient.Chapter
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), spec.MaxURLBytes+spec.MaxChapterTitleBytes+spec.MaxRevisionBytes+64)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		u, rest, _ := strings.Cut(text, " ")
		c := exportclient.Chapter{URL: u}
		rest = strings.TrimSpace(rest)
		if r, ok := strings.CutPrefix(rest, "rev="); ok {
			c.Revision, rest, _ = strings.Cut(r, " ")
			if c.Revision == "" {
				return nil, fmt.Errorf("line %d: rev= names no revision", line)
			}
		}
		c.Title = strings.TrimSpace(rest)
		if len(chapters) == spec.MaxChapters {
			return nil, fmt.Errorf("line %d: more than %d chapters", line, spec.MaxChapters)
		}
		chapters = append(chapters, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("a line is too long: %w", err)
	}
	if len(chapters) == 0 {
		return nil, fmt.Errorf("lists no chapter (one \"URL [rev=REVISION] [title]\" a line)")
	}
	return chapters, nil
}

// watchChapters shows a manual's progress while the caller waits for it:
// a bar of stored chapters on a terminal, a line whenever the count moved
// (at most every 5 s) otherwise. It reads the status every second and
// stops when ctx ends or the returned stop is called.
func watchChapters(ctx context.Context, e env, client *exportclient.Client, taskID string, total int) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var bar *progressbar.ProgressBar
	if f, ok := e.stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(e.stderr), progressbar.OptionSetDescription("chapters"),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish())
	}
	go func() {
		defer close(done)
		last, lastLine := -1, time.Time{}
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			st, err := client.Status(ctx, taskID)
			if err != nil || st.Progress == nil {
				continue
			}
			p := st.Progress
			if bar != nil {
				bar.ChangeMax(p.ChaptersTotal)
				_ = bar.Set(p.ChaptersDone)
				continue
			}
			if p.ChaptersDone != last && time.Since(lastLine) >= 5*time.Second {
				fmt.Fprintf(e.stderr, "chapters: %d of %d stored\n", p.ChaptersDone, p.ChaptersTotal)
				last, lastLine = p.ChaptersDone, time.Now()
			}
		}
	}()
	return func() {
		cancel()
		<-done
		if bar != nil {
			_ = bar.Finish()
		}
	}
}
