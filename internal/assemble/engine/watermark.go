package engine

import "context"

// WatermarkOptions are the watermarks to draw, in order.
type WatermarkOptions struct {
	Marks []Mark
}

// Watermark draws each mark beneath the selected pages' content.
func Watermark(ctx context.Context, pdf []byte, opts WatermarkOptions) ([]byte, error) {
	return applyMarks(ctx, pdf, opts.Marks, false)
}
