package render

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// TestRender_LimitsStopTheStream: a PDF with more pages than MaxPages, or
// more bytes than MaxBytes, fails for good (not retryable) with an error
// naming the limit, and the sink's reader fails before the end, so nothing
// complete can be stored. Within both limits the same document renders.
func TestRender_LimitsStopTheStream(t *testing.T) {
	t.Parallel()
	html := multiPageHTML(40)
	for _, tc := range []struct {
		name  string
		cfg   Config
		limit string // in the error
	}{
		{"pages", Config{MaxPages: 10}, "RENDER_MAX_PAGES=10"},
		{"bytes", Config{MaxBytes: 20 << 10}, "RENDER_MAX_BYTES=20480"},
		{"within both", Config{MaxPages: 40, MaxBytes: 64 << 20}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRenderer(t, tc.cfg)
			var got bytes.Buffer
			var readErr error
			_, err := r.Render(context.Background(), Source{HTML: html}, settings(spec.Options{}), func(_ context.Context, pdf io.Reader) error {
				_, readErr = io.Copy(&got, pdf)
				return readErr
			})
			if tc.limit == "" {
				if err != nil {
					t.Fatalf("Render within the limits: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrLimit) || Retryable(err) || !strings.Contains(err.Error(), tc.limit) {
				t.Fatalf("Render = %v (retryable %v); want a final ErrLimit naming %s", err, Retryable(err), tc.limit)
			}
			if readErr == nil {
				t.Errorf("the sink read %d bytes to a clean end; it must see the stream fail", got.Len())
			}
		})
	}
}
