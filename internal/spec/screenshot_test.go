package spec_test

import (
	"math"
	"strings"
	"testing"

	. "github.com/pdfexport/pdfexport/internal/spec"
)

func shotPayload(s *Screenshot) Envelope {
	p := validPayload()
	p.V = EnvelopeVersion
	p.Options.Screenshot = s
	return p
}

// TestScreenshot_Validate: what options.screenshot accepts and refuses,
// naming the field: its own bounds, a source of more than one page, and
// the options only a PDF has.
func TestScreenshot_Validate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mut   func(p *Envelope)
		field string // "" when valid
	}{
		{"the defaults", func(p *Envelope) {}, ""},
		{"every field", func(p *Envelope) {
			*p.Options.Screenshot = Screenshot{Format: "jpeg", Width: 1920, Height: 1080, Clip: true, Selector: "#main > p",
				Quality: new(0), OptimizeForSpeed: true, OmitBackground: true, DeviceScaleFactor: new(2.0)}
		}, ""},
		{"paper and margins are harmless", func(p *Envelope) { p.Options.Paper, p.Options.Landscape = "Letter", true }, ""},
		{"an unknown format", func(p *Envelope) { p.Options.Screenshot.Format = "gif" }, "options.screenshot.format"},
		{"a negative width", func(p *Envelope) { p.Options.Screenshot.Width = -1 }, "options.screenshot.width"},
		{"a height too large", func(p *Envelope) { p.Options.Screenshot.Height = MaxScreenshotSide + 1 }, "options.screenshot.height"},
		{"quality over 100", func(p *Envelope) { p.Options.Screenshot.Quality = new(101) }, "options.screenshot.quality"},
		{"a negative quality", func(p *Envelope) { p.Options.Screenshot.Quality = new(-1) }, "options.screenshot.quality"},
		{"a zero scale", func(p *Envelope) { p.Options.Screenshot.DeviceScaleFactor = new(0.0) }, "options.screenshot.device_scale_factor"},
		{"a NaN scale", func(p *Envelope) { p.Options.Screenshot.DeviceScaleFactor = new(math.NaN()) }, "options.screenshot.device_scale_factor"},
		{"a scale too large", func(p *Envelope) { p.Options.Screenshot.DeviceScaleFactor = new(MaxScreenshotScale + 1) }, "options.screenshot.device_scale_factor"},
		{"a selector too long", func(p *Envelope) { p.Options.Screenshot.Selector = strings.Repeat("a", MaxSelectorBytes+1) }, "options.screenshot.selector"},
		{"a selector with a control character", func(p *Envelope) { p.Options.Screenshot.Selector = "#a\x00" }, "options.screenshot.selector"},
		{"chapters", func(p *Envelope) {
			p.Source = EnvelopeSource{Chapters: []Chapter{{HTML: "<h1>a</h1>"}}}
		}, "options.screenshot"},
		{"a footer", func(p *Envelope) { p.Options.FooterHTML = "<span></span>" }, "options.footer_html"},
		{"page ranges", func(p *Envelope) { p.Options.PageRanges = "1" }, "options.page_ranges"},
		{"a watermark", func(p *Envelope) { p.Options.Watermark = &Watermark{Text: "x"} }, "options.watermark"},
		{"a fast web view", func(p *Envelope) { p.Options.FastWebView = true }, "options.fast_web_view"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := shotPayload(&Screenshot{})
			tc.mut(&p)
			err := p.Validate(Hosts{Sources: testAllowed})
			if tc.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				checkKey(t, p)
				return
			}
			if got := FirstField(err); got != tc.field {
				t.Fatalf("field %q (err %v), want %q", got, err, tc.field)
			}
		})
	}
}

// TestScreenshot_ArtifactKey: an image is an artifact of its own, named
// with its format's extension: a PNG and a JPEG of the same page are two,
// and neither is the page's PDF; spelled-out defaults, and a quality a
// format does not use, name the same one.
func TestScreenshot_ArtifactKey(t *testing.T) {
	pdf := validPayload().ArtifactKey()
	png := shotPayload(&Screenshot{}).ArtifactKey()
	jpeg := shotPayload(&Screenshot{Format: "jpeg"}).ArtifactKey()
	webp := shotPayload(&Screenshot{Format: "webp"}).ArtifactKey()
	for key, ext := range map[string]string{pdf: ".pdf", png: ".png", jpeg: ".jpeg", webp: ".webp"} {
		if !strings.HasSuffix(key, ext) {
			t.Errorf("key %q, want it to end in %s", key, ext)
		}
	}
	stem := func(k string) string { return k[:strings.LastIndexByte(k, '.')] }
	if stem(png) == stem(jpeg) || stem(png) == stem(pdf) || stem(jpeg) == stem(webp) {
		t.Errorf("formats share a content hash: %s %s %s %s", pdf, png, jpeg, webp)
	}
	for name, s := range map[string]*Screenshot{
		"spelled-out defaults":    {Format: "png", Width: DefaultScreenshotWidth, Height: DefaultScreenshotHeight, DeviceScaleFactor: new(1.0)},
		"a png's quality":         {Quality: new(30)},
		"a clip under a selector": {Selector: "#x", Clip: true},
	} {
		want := png
		if s.Selector != "" {
			want = shotPayload(&Screenshot{Selector: "#x"}).ArtifactKey()
		}
		if got := shotPayload(s).ArtifactKey(); got != want {
			t.Errorf("%s: key %s, want %s", name, got, want)
		}
	}
	for name, s := range map[string]*Screenshot{
		"a jpeg's quality":         {Format: "jpeg", Quality: new(50)},
		"a viewport":               {Width: 1920},
		"a clip":                   {Clip: true},
		"a selector":               {Selector: "#x"},
		"a transparent background": {OmitBackground: true},
	} {
		if got := shotPayload(s).ArtifactKey(); got == png || got == jpeg {
			t.Errorf("%s does not change the key (%s)", name, got)
		}
	}
}

// TestScreenshot_Settings: a screenshot shows the page in screen media
// unless told otherwise, and needs workers of envelope version 4.
func TestScreenshot_Settings(t *testing.T) {
	if m := (Options{Screenshot: &Screenshot{}}).Settings().Media; m != "screen" {
		t.Errorf("media %q, want screen", m)
	}
	if m := (Options{Screenshot: &Screenshot{}, Media: "print"}).Settings().Media; m != "print" {
		t.Errorf("media %q, want print as asked", m)
	}
	if m := (Options{}).Settings().Media; m != DefaultMedia {
		t.Errorf("a PDF's media %q, want %s", m, DefaultMedia)
	}
	if v, field := shotPayload(&Screenshot{Format: "webp"}).NeededVersion(); v != 4 || !strings.HasPrefix(field, "options.screenshot") {
		t.Errorf("NeededVersion %d %q, want 4 for options.screenshot", v, field)
	}
	for key, want := range map[string]string{"m/v/0123456789abcdef.png": "image/png", "m/v/0123456789abcdef.jpeg": "image/jpeg",
		"m/v/0123456789abcdef.webp": "image/webp", "m/v/0123456789abcdef.pdf": "application/pdf"} {
		if got, _ := ArtifactType(key); got != want {
			t.Errorf("ArtifactType(%s) = %s, want %s", key, got, want)
		}
	}
}
