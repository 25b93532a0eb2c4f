package sourceauth

import (
	"context"
	"log/slog"
	"time"

	"github.com/pdfexport/pdfexport/internal/platform/reload"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// DefaultPollInterval is how often a Watcher looks for changed files.
const DefaultPollInterval = reload.DefaultPollInterval

// Watcher keeps the rules of SOURCE_AUTH_FILE current: it reloads them on
// SIGHUP and when the file, or a file a value names, changes (a Kubernetes
// Secret update swaps the files under a mount). A reload that fails keeps the
// rules in force and logs why; renders never see a half-read file.
type Watcher struct {
	// PollInterval is how often files are checked; 0 is DefaultPollInterval.
	// Set it before Run.
	PollInterval time.Duration

	w *reload.Watcher[Rules]
}

// Open loads path; a file that does not parse is a configuration error.
func Open(path string, logger *slog.Logger) (*Watcher, error) {
	w, err := reload.Open("SOURCE_AUTH_FILE", "source credentials", path, loadWatched,
		func(r *Rules) []any { return []any{"rules", r.Len()} }, logger)
	if err != nil {
		return nil, err
	}
	return &Watcher{w: w}, nil
}

func loadWatched(path string) (reload.Loaded[Rules], error) {
	rules, named, err := load(path)
	l := reload.Loaded[Rules]{Value: rules, Named: named}
	if rules != nil {
		l.Files = rules.files
	}
	return l, err
}

// For returns the credentials of the origin scheme://host:port under the
// rules in force.
func (w *Watcher) For(scheme, host, port string) spec.Credentials {
	if w == nil {
		return spec.Credentials{}
	}
	return w.w.Current().For(scheme, host, port)
}

// Rules returns the rules in force.
func (w *Watcher) Rules() *Rules { return w.w.Current() }

// Reload reads the file again; on error the rules in force stay.
func (w *Watcher) Reload() error { return w.w.Reload() }

// Run reloads on SIGHUP and on file changes until ctx ends.
func (w *Watcher) Run(ctx context.Context) {
	w.w.PollInterval = w.PollInterval
	w.w.Run(ctx)
}
