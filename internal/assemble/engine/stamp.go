package engine

import "context"

// StampOptions are the stamps to draw, in order.
type StampOptions struct {
	Marks []Mark
}

// Stamp draws each mark on top of the selected pages' content.
func Stamp(ctx context.Context, pdf []byte, opts StampOptions) ([]byte, error) {
	return applyMarks(ctx, pdf, opts.Marks, true)
}
