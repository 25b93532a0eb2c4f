package render

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/render/chromium"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// Output comparison: pages as images at a resolution where a missing
// image, font or paragraph changes thousands of pixels and anti-aliasing
// a few.
const (
	compareDPI       = 40
	pixelDiffLevel   = 64    // a channel that differs by more than this counts
	pageDiffFraction = 0.002 // share of a page's pixels that may differ
)

// TestRender_OutputUnchanged: the Renderer prints the pages the peer's bare
// tab (peer_test.go) prints of the same documents, compared as images
// (pdftoppm), on both Chromium builds: readiness on the page's virtual
// clock, its end once the page is idle (idle.go) and frames on demand
// (frames.go; the headless shell) lose nothing the page shows. The peer
// waits for the document's final state, which each document names (until),
// in real time and with Chromium's own frames. The documents: the Go
// specification (static), the sample manual (wait_for), a scripted page
// with a slow web font, a background image found by layout and an image a
// timer adds after the load event, a page that writes its text in
// animation frames, and one whose timer starts transitions.
func TestRender_OutputUnchanged(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("pdftoppm"); err != nil {
		t.Fatalf("pdftoppm (poppler-utils) is needed: %v", err)
	}
	font, err := os.ReadFile("/usr/share/fonts/truetype/dejavu/DejaVuSerif-Bold.ttf")
	if err != nil {
		t.Skipf("test font not installed: %v", err)
	}
	site := newSite(t, func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/font.ttf":
			time.Sleep(150 * time.Millisecond)
			w.Header().Set("Content-Type", "font/ttf")
			w.Write(font)
		case "/late.png", "/background.png":
			time.Sleep(150 * time.Millisecond)
			w.Header().Set("Content-Type", "image/png")
			w.Write(testPNG(t, req.URL.Path == "/late.png"))
		case "/transition":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(transitionPage))
		default:
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(lateAssetsPage))
		}
	})
	docs := []struct {
		name  string
		src   Source
		s     spec.PrintSettings
		until string // the document's final state, for the peer
	}{
		{"go spec", Source{HTML: goSpecDocument(t)}, settings(spec.Options{}), ""},
		{"sample manual", Source{HTML: manualHTML(t)}, settings(spec.Options{WaitFor: "window.__PDF_READY__===true"}), ""},
		{"web font and late images", Source{URL: site.URL + "/"}, settings(spec.Options{PrintBackground: new(true)}), lateAssetsLoaded},
		{"animation frames", Source{HTML: animationFramesPage}, settings(spec.Options{}), "window.__framed === true"},
		{"a transition a timer starts", Source{URL: site.URL + "/transition"}, settings(spec.Options{PrintBackground: new(true)}), transitionEnded},
	}
	cfg := Config{AllowedHosts: allowlist.MustParse(site.hostPort())}
	for build, path := range testsupport.ChromiumBuilds(t) {
		t.Run(build, func(t *testing.T) {
			c := cfg
			c.ChromiumPath = path
			r := newRenderer(t, c)
			if shell := chromium.IsHeadlessShell(path); r.current().frameControl.Load() != shell {
				t.Errorf("BeginFrame control %v, want %v (on the headless shell only)", !shell, shell)
			}
			p := newPeer(t, path)
			for _, d := range docs {
				t.Run(d.name, func(t *testing.T) {
					want := rasterize(t, peerPDF(t, p, d.src, d.s, d.until))
					got := rasterize(t, mustRender(t, r, d.src, d.s).pdf)
					if len(got) != len(want) {
						t.Fatalf("%d pages, the peer's %d", len(got), len(want))
					}
					for i := range want {
						if n, total := pixelDiff(t, want[i], got[i]); float64(n) > pageDiffFraction*float64(total) {
							t.Errorf("page %d: %d of %d pixels differ from the peer's (more than %.1f %%)", i+1, n, total, 100*pageDiffFraction)
						}
					}
				})
			}
		})
	}
}

// lateAssetsLoaded is true once lateAssetsPage is complete: its font
// loaded, its late image added and loaded, its background image fetched.
const lateAssetsLoaded = `[...document.fonts].every(f => f.status === "loaded") &&
	document.images.length === 1 && document.images[0].complete &&
	performance.getEntriesByName(new URL("/background.png", location).href).length > 0`

// transitionEnded is true once transitionPage's transitions have run.
const transitionEnded = `document.body.className === "shown" && document.getAnimations().length === 0`

// lateAssetsPage loads a web font and a background image that only layout
// requests, and adds an image 100 ms after its load event.
const lateAssetsPage = `<!doctype html><html><head><style>
@font-face { font-family: Late; src: url(/font.ttf); }
h1 { font-family: Late, monospace; font-size: 40px; }
.bg { width: 300px; height: 120px; background: url(/background.png); }
img { width: 300px; height: 120px; display: block; }
</style></head><body>
<h1>Typeset in a late web font</h1>
<div class="bg"></div>
<p>The image below arrives after the load event.</p>
<script>
addEventListener("load", () => setTimeout(() => {
	const img = document.createElement("img");
	img.src = "/late.png";
	document.body.append(img);
}, 100));
</script>
</body></html>`

// transitionPage fades a heading and a block in: a timer 100 ms after the
// load event starts their 150 ms transitions.
const transitionPage = `<!doctype html><html><head><style>
h1, div { transition: color 150ms linear, background-color 150ms linear; color: white; }
div { width: 300px; height: 120px; background-color: white; }
.shown h1 { color: black; }
.shown div { background-color: rgb(0, 0, 200); }
</style></head><body>
<h1>Faded in by a transition</h1>
<div></div>
<script>
addEventListener("load", () => setTimeout(() => document.body.className = "shown", 100));
</script>
</body></html>`

// testPNG is a 300×120 image of bars, red or blue.
func testPNG(t *testing.T, red bool) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 300, 120))
	c := color.RGBA{0, 0, 200, 255}
	if red {
		c = color.RGBA{200, 0, 0, 255}
	}
	for y := range 120 {
		for x := range 300 {
			if (x/20)%2 == 0 {
				img.Set(x, y, c)
			} else {
				img.Set(x, y, color.White)
			}
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Error(err)
	}
	return b.Bytes()
}

// rasterize renders every page of pdf at compareDPI (pdftoppm) and
// returns the pages as binary PPM files.
func rasterize(t *testing.T, pdf []byte) [][]byte {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pdf")
	if err := os.WriteFile(in, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("pdftoppm", "-r", fmt.Sprint(compareDPI), in, filepath.Join(dir, "page")).CombinedOutput(); err != nil {
		t.Fatalf("pdftoppm: %v\n%s", err, out)
	}
	files, err := filepath.Glob(filepath.Join(dir, "page-*.ppm"))
	if err != nil || len(files) == 0 {
		t.Fatalf("pdftoppm wrote no page (%v)", err)
	}
	// page-1.ppm … page-50.ppm are zero-padded to the same width, so the
	// names sort in page order.
	var pages [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, b)
	}
	return pages
}

// pixelDiff counts the pixels of two binary PPM images (P6, maxval 255)
// with a channel that differs by more than pixelDiffLevel; images of other
// sizes differ in every pixel.
func pixelDiff(t *testing.T, a, b []byte) (diff, total int) {
	t.Helper()
	wa, ha, pa := parsePPM(t, a)
	wb, hb, pb := parsePPM(t, b)
	total = wa * ha
	if wa != wb || ha != hb {
		return total, total
	}
	for i := 0; i+2 < len(pa) && i+2 < len(pb); i += 3 {
		for c := range 3 {
			d := int(pa[i+c]) - int(pb[i+c])
			if d > pixelDiffLevel || d < -pixelDiffLevel {
				diff++
				break
			}
		}
	}
	return diff, total
}

func parsePPM(t *testing.T, b []byte) (w, h int, pix []byte) {
	t.Helper()
	var maxval int
	r := bytes.NewReader(b)
	if _, err := fmt.Fscan(r, new(string), &w, &h, &maxval); err != nil || maxval != 255 {
		t.Fatalf("not a P6 PPM with maxval 255: %v", err)
	}
	r.ReadByte() // the single whitespace after maxval
	pix = b[len(b)-r.Len():]
	if len(pix) != 3*w*h {
		t.Fatalf("PPM of %d×%d with %d bytes of pixels", w, h, len(pix))
	}
	return w, h, pix
}
