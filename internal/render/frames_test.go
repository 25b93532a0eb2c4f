package render

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// animationFramesPage writes its text, and a box large enough for the
// output comparison to see, from the second animation frame after the load:
// printed only if the page gets frames.
const animationFramesPage = `<!doctype html><html><body><p>before</p><script>
addEventListener("load", () => requestAnimationFrame(() => requestAnimationFrame(() => {
	document.body.insertAdjacentHTML("beforeend", "<p>written in an animation frame</p>" +
		"<div style='width: 300px; height: 150px; border: 40px solid black'></div>");
	window.__framed = true;
})));
</script></body></html>`

// TestRender_PagesGetAnimationFrames: a page that waits for animation
// frames prints what it writes in them, with and without wait_for (the
// frames of a tab under BeginFrame control are the render's to give).
func TestRender_PagesGetAnimationFrames(t *testing.T) {
	t.Parallel()
	r := sharedRenderer(t)
	for _, waitFor := range []string{"window.__framed === true", ""} {
		out := mustRender(t, r, Source{HTML: animationFramesPage}, settings(spec.Options{WaitFor: waitFor}))
		if text := pdfText(t, out.pdf); !strings.Contains(text, "written in an animation frame") {
			t.Errorf("wait_for %q: the PDF lacks the text of the animation frame: %q", waitFor, text)
		}
	}
}

// TestRender_HungPageStallsNoOtherRender: a page whose script never yields
// (its main thread answers no frame) times out alone; renders beside it get
// their frames and finish, and the browser keeps running.
func TestRender_HungPageStallsNoOtherRender(t *testing.T) {
	t.Parallel()
	r := newRenderer(t, Config{Concurrency: 3})
	b := r.current()
	hung := `<!doctype html><p>hung</p><script>addEventListener("load", () => setTimeout(() => { for (;;) {} }, 20));</script>`
	var wg sync.WaitGroup
	wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
		defer cancel()
		out := render(t, r, ctx, Source{HTML: hung}, settings(spec.Options{WaitFor: "window.__never === true"}))
		if !errors.Is(out.err, ErrTimeout) {
			t.Errorf("hung page: %v, want ErrTimeout", out.err)
		}
	})
	time.Sleep(300 * time.Millisecond) // the hung page's loop runs
	for i := range 4 {
		began := time.Now()
		out := mustRender(t, r, Source{HTML: animationFramesPage}, settings(spec.Options{WaitFor: "window.__framed === true"}))
		if took := time.Since(began); took > 2*time.Second {
			t.Errorf("render %d beside the hung page took %v", i, took)
		}
		if text := pdfText(t, out.pdf); !strings.Contains(text, "written in an animation frame") {
			t.Errorf("render %d: the PDF lacks the text of the animation frame", i)
		}
	}
	wg.Wait()
	if r.current() != b || b.dead() {
		t.Errorf("the browser was replaced or died beside a hung page")
	}
}

// TestRender_RefusedFramesFallBackToChromiums: when Chromium refuses the
// BeginFrames of a tab (here: a headless shell started without the flag they
// need), the render fails retryably before printing, and the browser's next
// tabs get Chromium's own frames (a spare tab made under BeginFrame control
// is not taken): the retry prints what the page wrote in its animation
// frames.
func TestRender_RefusedFramesFallBackToChromiums(t *testing.T) {
	t.Parallel()
	r := newRenderer(t, Config{}, func(r *Renderer) { r.hooks.noFrameControlFlag = true })
	if !r.current().frameControl.Load() {
		t.Fatal("the headless shell did not start with BeginFrame control")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src := Source{HTML: animationFramesPage}
	s := settings(spec.Options{WaitFor: "window.__framed === true"})
	first := render(t, r, ctx, src, s)
	if !errors.Is(first.err, ErrNavigation) || !Retryable(first.err) || len(first.pdf) > 0 {
		t.Fatalf("first render: %v (%d bytes); want a retryable ErrNavigation and nothing printed", first.err, len(first.pdf))
	}
	if r.current().frameControl.Load() {
		t.Error("BeginFrame control still on after Chromium refused a frame")
	}
	out := mustRender(t, r, src, s)
	if text := pdfText(t, out.pdf); !strings.Contains(text, "written in an animation frame") {
		t.Errorf("the retry lacks the text of the animation frame: %q", text)
	}
}

// TestRender_PrintsLazyImageOfFirstScreen: a lazy image in the first
// screen starts loading in the first frame after the load (or after a
// wait_for that is true at once), which the render gives and then waits
// for, so the image is printed however late it arrives (with Chromium's own
// frames it was a race with the print).
func TestRender_PrintsLazyImageOfFirstScreen(t *testing.T) {
	t.Parallel()
	site := newSite(t, func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/late.png" {
			time.Sleep(150 * time.Millisecond)
			w.Header().Set("Content-Type", "image/png")
			w.Write(testPNG(t, true))
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<!doctype html><p>A lazy image in the first screen:</p>
<img loading="lazy" src="/late.png" style="width: 300px; height: 120px; display: block">`))
	})
	r := newRenderer(t, Config{AllowedHosts: allowlist.MustParse(site.hostPort())})
	for i := range 4 {
		// Without wait_for, and with one that is true when first asked.
		waitFor := []string{"", "true"}[i%2]
		pages := rasterize(t, mustRender(t, r, Source{URL: site.URL + "/"}, settings(spec.Options{WaitFor: waitFor})).pdf)
		if n := redPixels(t, pages[0]); n < 1000 {
			t.Errorf("render %d (wait_for %q): %d red pixels on page 1; the lazy image (red bars) is missing", i, waitFor, n)
		}
	}
}

// redPixels counts the clearly red pixels of a binary PPM image.
func redPixels(t *testing.T, ppm []byte) int {
	t.Helper()
	_, _, pix := parsePPM(t, ppm)
	n := 0
	for i := 0; i+2 < len(pix); i += 3 {
		if pix[i] > 150 && pix[i+1] < 80 && pix[i+2] < 80 {
			n++
		}
	}
	return n
}
