package spec

import (
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

// Screenshot (options.screenshot) makes the export an image of the page
// instead of a PDF: the page is loaded and made ready as for a print, laid
// out in a viewport of Width x Height CSS pixels, and captured
// (Page.captureScreenshot). Only a single page (source.url or source.html)
// is captured; the options that shape a PDF are refused with it.
type Screenshot struct {
	// Format is png (the default), jpeg or webp.
	Format string `json:"format,omitempty"`
	// Width and Height are the viewport in CSS pixels; 0: 800 x 600.
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
	// Clip captures the viewport's size from the top of the page; without
	// it the whole page, as wide as the viewport, is captured.
	Clip bool `json:"clip,omitempty"`
	// Selector captures the box of the first element it matches (it takes
	// precedence over Clip); one with no visible box fails the export.
	Selector string `json:"selector,omitempty"`
	// Quality is the compression quality of a jpeg, 0 to 100; nil: 100.
	Quality *int `json:"quality,omitempty"`
	// OptimizeForSpeed encodes faster, not smaller.
	OptimizeForSpeed bool `json:"optimize_for_speed,omitempty"`
	// OmitBackground captures the page's default white background as
	// transparent (png and webp).
	OmitBackground bool `json:"omit_background,omitempty"`
	// DeviceScaleFactor is device pixels per CSS pixel; nil: 1.
	DeviceScaleFactor *float64 `json:"device_scale_factor,omitempty"`
}

// ScreenshotFormats are the accepted Screenshot.Format values, the first
// the default.
var ScreenshotFormats = []string{"png", "jpeg", "webp"}

// Screenshot bounds: a viewport's side and its scale bound the pixels one
// capture makes (and Chromium holds twice over while it encodes them).
const (
	DefaultScreenshotWidth  = 800
	DefaultScreenshotHeight = 600
	MaxScreenshotSide       = 8192
	MaxScreenshotScale      = 4.0
	MaxSelectorBytes        = 1024
)

// ScreenshotSettings are Screenshot with every default applied: what the
// renderer captures with and what the artifact key hashes.
type ScreenshotSettings struct {
	Format            string  `json:"format"`
	Width             int     `json:"width"`
	Height            int     `json:"height"`
	Clip              bool    `json:"clip"`
	Selector          string  `json:"selector"`
	Quality           int     `json:"quality"` // jpeg only, else 0
	OptimizeForSpeed  bool    `json:"optimize_for_speed"`
	OmitBackground    bool    `json:"omit_background"`
	DeviceScaleFactor float64 `json:"device_scale_factor"`
}

// settings resolves s (nil: no screenshot).
func (s *Screenshot) settings() *ScreenshotSettings {
	if s == nil {
		return nil
	}
	out := &ScreenshotSettings{Format: s.Format, Width: s.Width, Height: s.Height, Clip: s.Clip, Selector: s.Selector,
		OptimizeForSpeed: s.OptimizeForSpeed, OmitBackground: s.OmitBackground, DeviceScaleFactor: 1}
	if out.Format == "" {
		out.Format = ScreenshotFormats[0]
	}
	if out.Width == 0 {
		out.Width = DefaultScreenshotWidth
	}
	if out.Height == 0 {
		out.Height = DefaultScreenshotHeight
	}
	if out.Format == "jpeg" {
		out.Quality = 100
		if s.Quality != nil {
			out.Quality = *s.Quality
		}
	}
	if s.DeviceScaleFactor != nil {
		out.DeviceScaleFactor = *s.DeviceScaleFactor
	}
	if out.Selector != "" {
		out.Clip = false // the selector's box is the clip
	}
	return out
}

// MediaType is the Content-Type of the image.
func (s ScreenshotSettings) MediaType() string { return "image/" + s.Format }

// artifactExt is the file extension of the artifact o makes.
func (o Options) artifactExt() string {
	if o.Screenshot != nil {
		return "." + o.Screenshot.settings().Format
	}
	return ".pdf"
}

// ArtifactType is the Content-Type and file extension of the artifact
// stored under key: an image of a screenshot, else a PDF.
func ArtifactType(key string) (mediaType, ext string) {
	ext = path.Ext(key)
	if f := strings.TrimPrefix(ext, "."); slices.Contains(ScreenshotFormats, f) {
		return "image/" + f, ext
	}
	return "application/pdf", ".pdf"
}

// validateScreenshot checks options.screenshot and refuses, beside it, the
// options that only a PDF has and the sources that are not one page.
func (o Options) validateScreenshot(manual bool) []error {
	s := o.Screenshot
	if s == nil {
		return nil
	}
	var errs []error
	add := func(e *FieldError) { errs = append(errs, e) }
	if s.Format != "" && !slices.Contains(ScreenshotFormats, s.Format) {
		add(fieldErr("options.screenshot.format", "must be one of %s, got %q", strings.Join(ScreenshotFormats, ", "), s.Format))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"width", s.Width}, {"height", s.Height}} {
		if f.v < 0 || f.v > MaxScreenshotSide {
			add(fieldErr("options.screenshot."+f.name, "must be between 1 and %d CSS pixels (0: the default), got %d", MaxScreenshotSide, f.v))
		}
	}
	if q := s.Quality; q != nil && (*q < 0 || *q > 100) {
		add(fieldErr("options.screenshot.quality", "must be between 0 and 100, got %d", *q))
	}
	if d := s.DeviceScaleFactor; d != nil && !(*d > 0 && *d <= MaxScreenshotScale) { // NaN too
		add(fieldErr("options.screenshot.device_scale_factor", "must be above 0 and at most %g, got %g", MaxScreenshotScale, *d))
	}
	if len(s.Selector) > MaxSelectorBytes {
		add(fieldErr("options.screenshot.selector", "longer than %d bytes", MaxSelectorBytes))
	} else if !utf8.ValidString(s.Selector) || !printable(s.Selector) {
		add(fieldErr("options.screenshot.selector", "must be printable UTF-8 text"))
	}
	if manual {
		add(fieldErr("options.screenshot", "captures one page: source.url or source.html, not source.chapters or source.site"))
	}
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"options.header_html", o.HeaderHTML != ""}, {"options.footer_html", o.FooterHTML != ""},
		{"options.outline", o.Outline}, {"options.tagged", o.Tagged}, {"options.page_ranges", o.PageRanges != ""},
		{"options.metadata", o.Metadata != nil}, {"options.watermark", o.Watermark != nil},
		{"options.encryption", o.Encryption != nil}, {"options.fast_web_view", o.FastWebView},
		{"options.toc", o.TOC}, {"options.pdf_ua", o.PDFUA}, {"options.pdf_a", o.PDFA != ""},
	} {
		if f.set {
			add(fieldErr(f.name, "shapes a PDF; not with options.screenshot, which makes an image"))
		}
	}
	return errs
}
