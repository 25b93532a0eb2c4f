// Package reload keeps an operator's file in force while the process runs:
// a Watcher reloads it on SIGHUP and when it, or a file one of its values
// names, changes (a Kubernetes Secret update swaps the files under a
// mount). A reload that fails keeps what is in force and logs why, so a
// half-written or broken file never takes effect. Value resolves the
// "env:NAME" and "file:PATH" forms such files use for secrets.
// SOURCE_AUTH_FILE (internal/render/sourceauth) and API_CLIENTS_FILE
// (internal/api/apiauth) are read through it.
package reload

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// DefaultPollInterval is how often a Watcher looks for changed files.
const DefaultPollInterval = 2 * time.Second

// MaxFileBytes bounds a watched file and every file a value names.
const MaxFileBytes = 1 << 20

// Env and ReadFile resolve env: and file: values; tests pass their own.
type (
	Env      func(name string) (string, bool)
	ReadFile func(path string) ([]byte, error)
)

// Loaded is what a Load returns: the value, the files it was read from
// besides the watched file itself (its file: values), and, on error too,
// the files its file: values name, read or not, so that one appearing
// later triggers a reload.
type Loaded[T any] struct {
	Value *T
	Files []string
	Named []string
}

// Load reads and parses the file at path.
type Load[T any] func(path string) (Loaded[T], error)

// Watcher keeps the value of one file current. Safe for concurrent use.
type Watcher[T any] struct {
	// PollInterval is how often files are checked; 0 is DefaultPollInterval.
	PollInterval time.Duration

	variable string // the setting naming the file, in errors ("SOURCE_AUTH_FILE")
	what     string // what it holds, in logs ("source credentials")
	path     string
	load     Load[T]
	summary  func(*T) []any
	log      *slog.Logger

	cur atomic.Pointer[T]

	mu      sync.Mutex // serializes reloads
	files   []string   // of cur
	watched []string   // the files whose change triggers a reload
	stamp   string     // of watched, at the last reload
}

// Open loads path; an error (a file that does not parse) names variable
// and path, and is a configuration error for the caller. what names the
// file's content in logs; summary, if not nil, gives the log attributes of
// a reload (counts, never values).
func Open[T any](variable, what, path string, load Load[T], summary func(*T) []any, logger *slog.Logger) (*Watcher[T], error) {
	if logger == nil {
		logger = slog.Default()
	}
	if summary == nil {
		summary = func(*T) []any { return nil }
	}
	w := &Watcher[T]{variable: variable, what: what, path: path, load: load, summary: summary, log: logger}
	if err := w.Reload(); err != nil {
		return nil, err
	}
	return w, nil
}

// Current is the value in force.
func (w *Watcher[T]) Current() *T { return w.cur.Load() }

// Reload reads the file again; on error the value in force stays.
func (w *Watcher[T]) Reload() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	l, err := w.load(w.path)
	if err != nil {
		// Remember what was seen, so a broken file is reported once, not
		// at every poll. The files the failed load names are watched too:
		// one that appears or changes (a Secret mounted after the file
		// naming it) triggers a reload.
		files := append([]string{w.path}, w.files...)
		for _, f := range l.Named {
			if !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
		w.watched = files
		w.stamp = stamp(files)
		return fmt.Errorf("%s %s: %w", w.variable, w.path, err)
	}
	w.cur.Store(l.Value)
	w.files = l.Files
	w.watched = append([]string{w.path}, l.Files...)
	w.stamp = stamp(w.watched)
	return nil
}

// Run reloads on SIGHUP and on file changes until ctx ends.
func (w *Watcher[T]) Run(ctx context.Context) {
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

func (w *Watcher[T]) changed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return stamp(w.watched) != w.stamp
}

func (w *Watcher[T]) reload(why string) {
	if err := w.Reload(); err != nil {
		w.log.Error(w.what+" not reloaded; the previous ones stay in force", "why", why, "err", err)
		return
	}
	w.log.Info(w.what+" reloaded", append([]any{"why", why}, w.summary(w.cur.Load())...)...)
}

// stamp fingerprints files by content (they are small; size and mtime miss
// a same-size rewrite within the file system's timestamp granularity), a
// missing or unreadable file counting too, so its return is noticed.
func stamp(files []string) string {
	h := sha256.New()
	for _, f := range files {
		b, err := ReadBounded(f)
		if err != nil {
			fmt.Fprintf(h, "%s:unreadable;", f)
			continue
		}
		fmt.Fprintf(h, "%s:%d:", f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ReadBounded reads a file of at most MaxFileBytes.
func ReadBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("larger than %d bytes", MaxFileBytes)
	}
	return b, nil
}

// Value turns "env:NAME", "file:PATH" (the file's content, one trailing
// newline dropped) or a literal into the value; file is the path a file:
// value read. An error names the variable or the file, never a value.
func Value(raw string, env Env, readFile ReadFile) (value, file string, err error) {
	switch {
	case strings.HasPrefix(raw, "env:"):
		name := strings.TrimPrefix(raw, "env:")
		v, ok := env(name)
		if !ok || v == "" {
			return "", "", fmt.Errorf("environment variable %s is not set", name)
		}
		return v, "", nil
	case strings.HasPrefix(raw, "file:"):
		path := strings.TrimPrefix(raw, "file:")
		b, err := readFile(path)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return "", "", fmt.Errorf("reading %s: %w", path, err)
		}
		v := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if v == "" {
			return "", "", fmt.Errorf("%s is empty", path)
		}
		return v, path, nil
	}
	return raw, "", nil
}

// Named is the path a file: value names, or "".
func Named(raw string) string {
	p, _ := strings.CutPrefix(raw, "file:")
	if p == raw {
		return ""
	}
	return p
}
