package engine

import (
	"bytes"
	"context"
	"errors"
	"io"

	"github.com/pdfcpu/pdfcpu/pkg/api"
)

// MergeOptions configure Merge; the files' order is the pages' order.
type MergeOptions struct{}

// Merge is the pages of files, in order, as one PDF.
func Merge(ctx context.Context, files []File, _ MergeOptions) ([]byte, error) {
	if len(files) == 0 {
		return nil, &InputError{Err: errors.New("no PDF to merge")}
	}
	rs := make([]io.ReadSeeker, len(files))
	for i, f := range files {
		if err := api.Validate(bytes.NewReader(f.Data), Conf()); err != nil {
			return nil, &InputError{File: f.Name, Err: err}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rs[i] = bytes.NewReader(f.Data)
	}
	var out bytes.Buffer
	if err := api.MergeRaw(rs, &out, false, Conf()); err != nil {
		return nil, &InputError{Err: err}
	}
	return out.Bytes(), nil
}
