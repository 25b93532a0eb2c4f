// Package artifact is the record a worker stores beside every PDF it
// renders, "<key>.json": what a reuse reports of that PDF (its pages, its
// render's warnings) without opening it. The worker writes it
// (internal/tasks/export) and both the worker and bin/api (a POST answered from
// storage) read it, so its one definition and its one bounded reader live
// here.
package artifact

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// Info describes one stored PDF. A streamed upload cannot carry the page
// count in its headers (pages are known only at the end of the stream), and
// reusers must report it, so the renderer writes it after the PDF is stored.
type Info struct {
	ETag     string `json:"etag"` // of the PDF this describes; a mismatch means stale
	Pages    int    `json:"pages"`
	Bytes    int64  `json:"bytes"`
	RenderMS int64  `json:"render_ms"`
	Fence    int64  `json:"fence"`
	Renderer string `json:"renderer"`
	// The render's warnings, reported again by every reuser.
	Warnings        []spec.Warning `json:"warnings,omitempty"`
	WarningsOmitted int            `json:"warnings_omitted,omitempty"`
}

// MaxInfoBytes bounds an info object read: a record of a page count and at
// most spec's bounded warnings is far below it, and a storage object planted
// under the name cannot make a reader buffer more.
const MaxInfoBytes = 64 << 10

// InfoKey is the storage key of the info of the PDF stored under key.
func InfoKey(key string) string { return key + ".json" }

// Opener is the part of a storage backend ReadInfo needs.
type Opener interface {
	Open(ctx context.Context, key string) (io.ReadCloser, error)
}

// ReadInfo reads the info of the PDF stored under key. The caller compares
// its ETag with the PDF's own: an info left by a crashed renderer, or by an
// artifact since replaced, describes another PDF.
func ReadInfo(ctx context.Context, store Opener, key string) (Info, error) {
	rc, err := store.Open(ctx, InfoKey(key))
	if err != nil {
		return Info{}, err
	}
	defer rc.Close()
	var info Info
	if err := json.NewDecoder(io.LimitReader(rc, MaxInfoBytes)).Decode(&info); err != nil {
		return Info{}, fmt.Errorf("decoding %s: %w", InfoKey(key), err)
	}
	return info, nil
}
