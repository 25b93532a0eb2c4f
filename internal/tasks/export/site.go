package export

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// A manual from source.site is a manual from chapters once its chapters
// are known: the task reads them from the site's navigation (each with a
// revision derived from its content, or the site's revision) and goes on
// as for source.chapters under the key of those chapters, so a chapter
// whose content did not change is reused in every release of the site.
// The chapters are read again at every attempt: a retry after the site
// changed prints the site as it is.

// discoverSite turns p's site into its chapters.
func (h *Handler) discoverSite(ctx context.Context, log *slog.Logger, p job) (job, *spec.SiteDiscovery, error) {
	if h.cfg.Sites == nil {
		return p, nil, fmt.Errorf("source.site: this worker does not read sites: %w", asynq.SkipRetry)
	}
	ctx, span := startDiscovery(ctx, p.Source.Site.URL)
	d, err := h.cfg.Sites.Discover(ctx, *p.Source.Site)
	endDiscovery(span, d, err)
	if err != nil {
		err = fmt.Errorf("reading the chapters of source.site: %w", err)
		if errors.Is(err, spec.ErrInvalid) && !errors.Is(err, asynq.SkipRetry) {
			err = fmt.Errorf("%w: %w", err, asynq.SkipRetry)
		}
		return p, nil, err
	}
	manual := p.WithChapters(d.Chapters)
	if err := manual.Validate(h.cfg.Hosts); err != nil {
		// What the site's navigation lists is not a manual this worker
		// prints (a title or URL over a limit): the site's to fix.
		return p, nil, fmt.Errorf("the chapters of source.site: %w: %w", err, asynq.SkipRetry)
	}
	log.InfoContext(ctx, "site: chapters read from its navigation", "nav", d.Nav, "chapters", len(d.Chapters),
		"requests", d.Requests, "ms", d.Elapsed.Milliseconds())
	p.Envelope = manual
	return p, &spec.SiteDiscovery{Nav: d.Nav, DiscoveryMS: d.Elapsed.Milliseconds(), Requests: d.Requests}, nil
}
