package exportclient

// Screenshot is Options.Screenshot: the image's format and the viewport
// the page is laid out in. Zero fields take the defaults shown.
type Screenshot struct {
	Format string `json:"format,omitempty"` // png (default), jpeg, webp
	// Width and Height are the viewport in CSS pixels (default 800 x 600,
	// at most 8192 each).
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
	// Clip captures the viewport's size from the top of the page; without
	// it, the whole page.
	Clip bool `json:"clip,omitempty"`
	// Selector captures the box of the first element it matches; none
	// with a visible box fails the export.
	Selector string `json:"selector,omitempty"`
	// Quality is a jpeg's, 0 to 100 (default 100).
	Quality          *int `json:"quality,omitempty"`
	OptimizeForSpeed bool `json:"optimize_for_speed,omitempty"`
	// OmitBackground makes the default white background transparent.
	OmitBackground bool `json:"omit_background,omitempty"`
	// DeviceScaleFactor is device pixels per CSS pixel (default 1, at
	// most 4).
	DeviceScaleFactor *float64 `json:"device_scale_factor,omitempty"`
}
