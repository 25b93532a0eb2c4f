package sourceauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// DefaultPollInterval is how often a Watcher looks for changed files.
const DefaultPollInterval = 2 * time.Second

// Watcher keeps the rules of SOURCE_AUTH_FILE current: it reloads them on
// SIGHUP and when the file, or a file a value names, changes (a Kubernetes
// Secret update swaps the files under a mount). A reload that fails keeps the
// rules in force and logs why; renders never see a half-read file.
type Watcher struct {
	path string
	log  *slog.Logger
	// PollInterval is how often files are checked; 0 is DefaultPollInterval.
	PollInterval time.Duration

	rules atomic.Pointer[Rules]

	mu      sync.Mutex // serializes reloads
	watched []string   // the files whose change triggers a reload
	stamp   string     // of watched, at the last reload
}

// Open loads path; a file that does not parse is a configuration error.
func Open(path string, logger *slog.Logger) (*Watcher, error) {
	if logger == nil {
		logger = slog.Default()
	}
	w := &Watcher{path: path, log: logger}
	if err := w.Reload(); err != nil {
		return nil, err
	}
	return w, nil
}

// For returns the credentials of the origin scheme://host:port under the
// rules in force.
func (w *Watcher) For(scheme, host, port string) spec.Credentials {
	if w == nil {
		return spec.Credentials{}
	}
	return w.rules.Load().For(scheme, host, port)
}

// Rules returns the rules in force.
func (w *Watcher) Rules() *Rules { return w.rules.Load() }

// Reload reads the file again; on error the rules in force stay.
func (w *Watcher) Reload() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	rules, named, err := load(w.path)
	if err != nil {
		// Remember what was seen, so a broken file is reported once, not
		// at every poll. The files the failed rules name are watched too:
		// one that appears or changes (a Secret mounted after the rules)
		// triggers a reload.
		files := []string{w.path}
		if old := w.rules.Load(); old != nil {
			files = append(files, old.files...)
		}
		for _, f := range named {
			if !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
		w.watched = files
		w.stamp = stamp(files)
		return fmt.Errorf("SOURCE_AUTH_FILE %s: %w", w.path, err)
	}
	w.rules.Store(rules)
	w.watched = append([]string{w.path}, rules.files...)
	w.stamp = stamp(w.watched)
	return nil
}

// Run reloads on SIGHUP and on file changes until ctx ends.
func (w *Watcher) Run(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	every := w.PollInterval
	if every <= 0 {
		every = DefaultPollInterval
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			w.reload("SIGHUP")
		case <-tick.C:
			if w.changed() {
				w.reload("file changed")
			}
		}
	}
}

func (w *Watcher) changed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return stamp(w.watched) != w.stamp
}

func (w *Watcher) reload(why string) {
	if err := w.Reload(); err != nil {
		w.log.Error("source credentials not reloaded; the previous rules stay in force", "why", why, "err", err)
		return
	}
	w.log.Info("source credentials reloaded", "why", why, "rules", w.rules.Load().Len())
}

// stamp fingerprints files by content (they are small; size and mtime miss
// a same-size rewrite within the file system's timestamp granularity), a
// missing or unreadable file counting too, so its return is noticed.
func stamp(files []string) string {
	h := sha256.New()
	for _, f := range files {
		b, err := readBounded(f)
		if err != nil {
			fmt.Fprintf(h, "%s:unreadable;", f)
			continue
		}
		fmt.Fprintf(h, "%s:%d:", f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}
