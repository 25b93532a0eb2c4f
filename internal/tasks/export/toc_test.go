package export

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// passCounter counts the renders of a real Renderer.
type passCounter struct {
	*render.Renderer
	n atomic.Int32
}

func (p *passCounter) Render(ctx context.Context, src render.Source, s spec.PrintSettings, sink func(context.Context, io.Reader) error) (render.Stats, error) {
	p.n.Add(1)
	return p.Renderer.Render(ctx, src, s, sink)
}

// TestTableOfContents_PagesAndNumbers: Chromium prints tables of contents
// of one page and of several; each lists every chapter with the page it
// starts on in the manual (after the contents), and one whose titles fit
// on a line is printed once (tocPagesAtLeast guessed its length), one of
// wrapping titles at most twice.
func TestTableOfContents_PagesAndNumbers(t *testing.T) {
	r, err := render.New(render.Config{ChromiumPath: testsupport.ChromiumPath(t), Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	counter := &passCounter{Renderer: r}
	h := fastHandler(t, &memStore{}, counter, openGate{})
	for _, tc := range []struct {
		name       string
		settings   spec.Options
		entries    int
		long       bool // titles that wrap
		wantPages  int  // 0: more than one
		wantPasses int  // at most
	}{
		{"one page", spec.Options{}, 3, false, 1, 1},
		{"two pages", spec.Options{}, 60, false, 2, 1},
		{"three pages", spec.Options{}, 120, false, 3, 1},
		{"landscape Letter at half scale", spec.Options{Paper: "Letter", Landscape: true, Scale: new(0.5)}, 120, false, 0, 1},
		{"wrapping titles", spec.Options{}, 60, true, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entries := make([]partInfo, tc.entries)
			for i := range entries {
				entries[i] = partInfo{title: fmt.Sprintf("Part %03d", i+1), pages: 1 + i%3}
				if tc.long {
					entries[i].title += strings.Repeat(" with a title long enough to wrap", 4)
				}
			}
			counter.n.Store(0)
			part, pages, err := h.tableOfContents(context.Background(), tc.settings.Settings(), t.TempDir(), entries)
			if err != nil {
				t.Fatal(err)
			}
			if passes := int(counter.n.Load()); passes > tc.wantPasses {
				t.Errorf("printed %d times, want at most %d (tocPagesAtLeast = %d, printed %d pages)",
					passes, tc.wantPasses, tocPagesAtLeast(tc.settings.Settings(), tc.entries), pages)
			}
			if (tc.wantPages > 0 && pages != tc.wantPages) || (tc.wantPages == 0 && pages < 2) {
				t.Fatalf("%d pages, want %d (0: more than one)", pages, tc.wantPages)
			}
			out, err := exec.Command("pdftotext", "-layout", part.Path, "-").Output()
			if err != nil {
				t.Fatalf("pdftotext: %v", err)
			}
			if n := strings.Count(string(out), "\f"); n != pages {
				t.Fatalf("the file has %d pages, tableOfContents says %d", n, pages)
			}
			page := pages + 1
			found := 0
			for _, line := range strings.Split(string(out), "\n") {
				f := strings.Fields(line)
				if len(f) < 2 || f[0] != "Part" {
					continue
				}
				i, err := strconv.Atoi(f[1])
				if err != nil || i != found+1 {
					t.Fatalf("entry %q out of order after %d", line, found)
				}
				found++
				if !tc.long || !strings.HasSuffix(strings.TrimSpace(line), "wrap") {
					if last := f[len(f)-1]; last != strconv.Itoa(page) {
						t.Errorf("entry %d: %q, want page %d", i, line, page)
					}
				}
				page += entries[i-1].pages
			}
			if found != tc.entries {
				t.Fatalf("found %d entries of %d", found, tc.entries)
			}
		})
	}
}
