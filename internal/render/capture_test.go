package render

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	_ "image/jpeg"
	_ "image/png"
	"io"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// shotPage has a red 300x200 box below a white spacer taller than the
// default viewport, so a selector's clip proves the element's size and
// its offset in the page.
const shotPage = `<!doctype html><html><body style="margin:0">
<div style="height:700px"></div><div id="target" style="width:300px;height:200px;background:#ff0000"></div>
<div id="hidden" style="display:none">x</div></body></html>`

// TestStage_Capture: a screenshot render captures the ready page as the
// image its settings ask for (format, viewport, clip, selector,
// transparent background), and a selector that matches no visible box
// fails for good with ErrNoElement.
func TestStage_Capture(t *testing.T) {
	t.Parallel()
	r := sharedRenderer(t)
	red := color.RGBA{R: 255, A: 255}
	for _, tc := range []struct {
		name   string
		shot   spec.Screenshot
		magic  string // the image starts with it
		size   image.Point
		pixels map[image.Point]func(r, g, b, a uint32) bool
		err    error
	}{
		{name: "png, the whole page in the default viewport", magic: "\x89PNG", size: image.Pt(800, 900),
			pixels: map[image.Point]func(r, g, b, a uint32) bool{{10, 10}: opaqueWhite}},
		{name: "jpeg clipped to the viewport", shot: spec.Screenshot{Format: "jpeg", Width: 400, Height: 300, Clip: true, Quality: new(50)},
			magic: "\xff\xd8\xff", size: image.Pt(400, 300)},
		{name: "webp", shot: spec.Screenshot{Format: "webp"}, magic: "RIFF"},
		{name: "the selector's box", shot: spec.Screenshot{Selector: "#target"}, magic: "\x89PNG", size: image.Pt(300, 200),
			pixels: map[image.Point]func(r, g, b, a uint32) bool{{150, 100}: same(red)}},
		{name: "twice the device pixels", shot: spec.Screenshot{Selector: "#target", DeviceScaleFactor: new(2.0)}, magic: "\x89PNG", size: image.Pt(600, 400)},
		{name: "a transparent background", shot: spec.Screenshot{OmitBackground: true}, magic: "\x89PNG", size: image.Pt(800, 900),
			pixels: map[image.Point]func(r, g, b, a uint32) bool{{10, 10}: func(_, _, _, a uint32) bool { return a == 0 }}},
		{name: "a selector of no element", shot: spec.Screenshot{Selector: "#missing"}, err: ErrNoElement},
		{name: "a selector of no visible box", shot: spec.Screenshot{Selector: "#hidden"}, err: ErrNoElement},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			settings := spec.Options{Screenshot: &tc.shot}.Settings()
			var got []byte
			st, err := r.Render(ctx, Source{HTML: shotPage}, settings, func(_ context.Context, img io.Reader) error {
				var rerr error
				got, rerr = io.ReadAll(img)
				return rerr
			})
			if tc.err != nil {
				if !errors.Is(err, tc.err) || Retryable(err) {
					t.Fatalf("Render: %v (retryable %v); want a final %v", err, Retryable(err), tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if !bytes.HasPrefix(got, []byte(tc.magic)) || st.Bytes != int64(len(got)) {
				t.Fatalf("image of %d bytes (stats %d) starting %q; want %q", len(got), st.Bytes, got[:min(len(got), 8)], tc.magic)
			}
			if tc.size == (image.Point{}) {
				return
			}
			img, _, err := image.Decode(bytes.NewReader(got))
			if err != nil {
				t.Fatal(err)
			}
			if s := img.Bounds().Size(); s != tc.size {
				t.Errorf("image %v, want %v", s, tc.size)
			}
			for p, ok := range tc.pixels {
				if !ok(rgba(img.At(p.X, p.Y))) {
					t.Errorf("pixel %v is %v", p, img.At(p.X, p.Y))
				}
			}
		})
	}
}

func opaqueWhite(r, g, b, a uint32) bool { return r == 255 && g == 255 && b == 255 && a == 255 }

func same(c color.RGBA) func(r, g, b, a uint32) bool {
	return func(r, g, b, a uint32) bool {
		return r == uint32(c.R) && g == uint32(c.G) && b == uint32(c.B) && a == uint32(c.A)
	}
}

// TestRender_CaptureOnBothBuilds: the selector's box is captured on the
// headless shell, whose tabs draw only the frames the capture gives them
// (BeginFrame control), and on the full browser, which draws its own.
func TestRender_CaptureOnBothBuilds(t *testing.T) {
	t.Parallel()
	for build, path := range testsupport.ChromiumBuilds(t) {
		t.Run(build, func(t *testing.T) {
			r := newRenderer(t, Config{ChromiumPath: path, Timeout: 30 * time.Second})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var got []byte
			settings := spec.Options{Screenshot: &spec.Screenshot{Selector: "#target"}}.Settings()
			if _, err := r.Render(ctx, Source{HTML: shotPage}, settings, func(_ context.Context, img io.Reader) error {
				var err error
				got, err = io.ReadAll(img)
				return err
			}); err != nil {
				t.Fatalf("Render: %v", err)
			}
			img, _, err := image.Decode(bytes.NewReader(got))
			if err != nil {
				t.Fatal(err)
			}
			if s := img.Bounds().Size(); s != image.Pt(300, 200) || !same(color.RGBA{R: 255, A: 255})(rgba(img.At(150, 100))) {
				t.Errorf("image %v with %v at its centre, want the red 300x200 box", s, img.At(150, 100))
			}
		})
	}
}

func rgba(c color.Color) (r, g, b, a uint32) {
	r, g, b, a = c.RGBA()
	return r >> 8, g >> 8, b >> 8, a >> 8
}

// TestRender_CaptureOverMaxBytes: an image over RENDER_MAX_BYTES reaches
// no sink and fails for good with ErrLimit.
func TestRender_CaptureOverMaxBytes(t *testing.T) {
	t.Parallel()
	r := newRenderer(t, Config{MaxBytes: 1000, Timeout: 30 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sunk := false
	_, err := r.Render(ctx, Source{HTML: shotPage}, spec.Options{Screenshot: &spec.Screenshot{}}.Settings(), func(context.Context, io.Reader) error {
		sunk = true
		return nil
	})
	if !errors.Is(err, ErrLimit) || Retryable(err) || sunk {
		t.Fatalf("Render: %v (retryable %v, sink called %v), want a final ErrLimit before the sink", err, Retryable(err), sunk)
	}
}
