package export

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
	"github.com/pdfexport/pdfexport/internal/storage/artifact"
)

// artifactInfo is the record stored next to each PDF ("….pdf.json").
type artifactInfo = artifact.Info

func infoKey(key string) string { return artifact.InfoKey(key) }

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
	if _, ext := spec.ArtifactType(key); ext != ".pdf" {
		return artifactInfo{ETag: obj.ETag, Pages: 1, Bytes: obj.Size}, nil // an image (render.Stats.Pages)
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
	return artifact.ReadInfo(ctx, h.cfg.Store, key)
}
