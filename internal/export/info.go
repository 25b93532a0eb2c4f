package export

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
)

// artifactInfo is a small JSON object stored next to each PDF
// ("….pdf.json"). A streamed upload cannot carry the page count in its
// headers (pages are known only at the end of the stream), and reusers must
// report it, so the renderer writes it here after the PDF is stored.
type artifactInfo struct {
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

const maxInfoBytes = 64 << 10

func infoKey(key string) string { return key + ".json" }

func (h *Handler) writeInfo(ctx context.Context, key, etag string, info artifactInfo) error {
	info.ETag = etag
	b, err := json.Marshal(info)
	if err != nil {
		return err
	}
	opts := storage.PutOptions{FileName: "info.json"}
	_, err = h.cfg.Store.Create(ctx, infoKey(key), bytes.NewReader(b), opts)
	if !errors.Is(err, storage.ErrExists) {
		return err
	}
	// A forced re-render replaces the info of the artifact it replaced.
	old, err := h.cfg.Store.Stat(ctx, infoKey(key))
	if err != nil {
		return err
	}
	_, err = h.cfg.Store.Replace(ctx, infoKey(key), old.ETag, bytes.NewReader(b), opts)
	return err
}

// describe returns what a reuser reports of an artifact: its page count and
// its render's warnings from the info object, or, when the info is missing
// or stale (a renderer crashed between storing the PDF and its info), the
// pages counted in the PDF itself and no warnings.
func (h *Handler) describe(ctx context.Context, key string, obj storage.Object) (artifactInfo, error) {
	if info, err := h.readInfo(ctx, key); err == nil && info.ETag == obj.ETag {
		return info, nil
	}
	rc, err := h.cfg.Store.Open(ctx, key)
	if err != nil {
		return artifactInfo{}, fmt.Errorf("opening %s to count its pages: %w", obj.Key, err)
	}
	defer rc.Close()
	n, err := render.CountPages(rc)
	if err != nil {
		return artifactInfo{}, fmt.Errorf("counting pages of %s: %w", obj.Key, err)
	}
	return artifactInfo{ETag: obj.ETag, Pages: n, Bytes: obj.Size}, nil
}

func (h *Handler) readInfo(ctx context.Context, key string) (artifactInfo, error) {
	rc, err := h.cfg.Store.Open(ctx, infoKey(key))
	if err != nil {
		return artifactInfo{}, err
	}
	defer rc.Close()
	var info artifactInfo
	err = json.NewDecoder(io.LimitReader(rc, maxInfoBytes)).Decode(&info)
	return info, err
}
