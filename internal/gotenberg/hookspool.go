package gotenberg

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// A webhook's spool folder (spoolPrefix + an id + "/": an engine route's
// output, a conversion's step files under in/) is the delivery task's
// own. It is deleted once the task is final: delivered, its failure
// delivered, or its last attempt over; and at once when the 204 is not
// given after all (no task reads it). A process killed between the final
// attempt and the delete leaves the folder to the storage's lifecycle
// rules.

// spoolDeleter removes a folder of the spool (storage's File and S3).
type spoolDeleter interface {
	DeletePrefix(ctx context.Context, prefix string) error
}

// spoolDeleteWait bounds a delete, which runs also when the caller's
// context is done (a canceled request, a delivery past its timeout).
const spoolDeleteWait = 30 * time.Second

// spoolFolder is the spool folder key is stored in, "" when it is not a
// spool key (a conversion's artifact).
func spoolFolder(key string) string {
	id, _, ok := strings.Cut(strings.TrimPrefix(key, spoolPrefix), "/")
	if !ok || !strings.HasPrefix(key, spoolPrefix) || uuid.Validate(id) != nil {
		return ""
	}
	return spoolPrefix + id + "/"
}

// spoolFolders are the spool folders t's delivery reads.
func (t hookTask) spoolFolders() []string {
	var out []string
	add := func(key string) {
		if f := spoolFolder(key); f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	add(t.Key)
	if t.Steps != nil {
		for _, sf := range t.Steps.Files {
			add(sf.Key)
		}
	}
	return out
}

// dropSpool deletes t's spool folders. A failure is logged and no more:
// the delivery's outcome stands, the lifecycle rules remain.
func (h *handler) dropSpool(ctx context.Context, t hookTask) {
	for _, folder := range t.spoolFolders() {
		h.dropFolder(ctx, folder)
	}
}

// dropFolder deletes one spool folder.
func (h *handler) dropFolder(ctx context.Context, folder string) {
	d, ok := h.cfg.Spool.(spoolDeleter)
	if !ok {
		h.log.WarnContext(ctx, "gotenberg: the webhook spool cannot delete; its lifecycle rules must", "key", folder)
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), spoolDeleteWait)
	defer cancel()
	if err := d.DeletePrefix(dctx, folder); err != nil {
		h.log.WarnContext(ctx, "gotenberg: deleting the webhook spool failed", "key", folder, "err", err)
		return
	}
	h.log.DebugContext(ctx, "gotenberg: webhook spool deleted", "key", folder)
}
