package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A worker's temporary files (the spool of a render with document options,
// pdfcpu's output) live in one private directory it makes at start, never
// directly in TMPDIR: a name in a shared TMPDIR is one another local user
// can plant first, as a symlink the worker would write through or as a
// file of theirs that would receive the PDF. The directory is 0700
// (os.MkdirTemp), every file in it is created with O_EXCL under a random
// name of its own (os.CreateTemp), and no name is derived from another.
//
// The directory is flock(2)ed by its worker for as long as it runs, so a
// directory nobody holds is a stopped worker's, whatever its pid was and
// in whichever pid namespace: a worker that starts removes those in the
// background. The same lock keeps systemd-tmpfiles from aging a long idle
// worker's directory (tmpfiles.d(5)).

// workspacePrefix starts the name of every worker's private directory in
// TMPDIR, followed by its pid (for operators; the lock decides).
const workspacePrefix = "pdfexport-worker-"

// legacySpoolPrefix starts the names of the post-processing files earlier
// versions wrote directly in TMPDIR; the sweep removes stale ones.
const legacySpoolPrefix = "pdfexport-post-"

// staleAge is how old a legacy spool file must be before the sweep removes
// it: far beyond any render's deadline, as a worker of an earlier release
// may share TMPDIR and use it still. (A worker directory needs no age: its
// lock tells whether its worker runs.)
const staleAge = 24 * time.Hour

// sweepBatch is how many TMPDIR entries the sweep reads at a time; it
// checks for shutdown between batches, so a TMPDIR of millions of entries
// neither holds it in memory at once nor delays Close.
const sweepBatch = 512

// Workspace is what the handlers of one worker process share: the private
// directory of their temporary files and the one post-processing slot, so
// that however many lanes and handlers a worker runs, one document at a
// time is held by pdfcpu (MaxPostProcessBytes). Open it with OpenWorkspace
// and Close it when the handlers are done.
type Workspace struct {
	dir    string
	mu     sync.Mutex // guards lock
	lock   *os.File   // the directory itself, flock(2)ed while open
	slots  chan struct{}
	onPost func(delta int)

	stopSweep context.CancelFunc
	swept     chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// WorkspaceConfig configures OpenWorkspace.
type WorkspaceConfig struct {
	// Parent holds the private directory; "": os.TempDir() (TMPDIR).
	Parent string
	Logger *slog.Logger
	// OnPostProcess, when set, is called with +1 when a post-processing
	// takes the worker's slot and with -1 when it gives it back
	// (instrumentation).
	OnPostProcess func(delta int)
}

// sweepHook, when set (tests), runs before the background sweep reads
// Parent.
var sweepHook func(ctx context.Context)

// OpenWorkspace makes and locks the private directory and starts removing,
// in the background, what stopped workers left in Parent.
func OpenWorkspace(cfg WorkspaceConfig) (*Workspace, error) {
	if cfg.Parent == "" {
		cfg.Parent = os.TempDir()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	dir, lock, err := makeLocked(cfg.Parent)
	if err != nil {
		return nil, fmt.Errorf("private temporary directory in %s (TMPDIR): %w", cfg.Parent, err)
	}
	hook := sweepHook
	ctx, cancel := context.WithCancel(context.Background())
	w := &Workspace{dir: dir, lock: lock, slots: make(chan struct{}, 1), onPost: cfg.OnPostProcess,
		stopSweep: cancel, swept: make(chan struct{})}
	go func() {
		defer close(w.swept)
		if hook != nil {
			hook(ctx)
		}
		dirs, files, err := sweep(ctx, cfg.Parent, dir)
		switch {
		case err != nil && ctx.Err() == nil:
			cfg.Logger.Warn("removing temporary files stopped workers left behind", "dir", cfg.Parent, "err", err)
		case dirs+files > 0:
			cfg.Logger.Info("removed temporary files stopped workers left behind", "dir", cfg.Parent, "directories", dirs, "files", files)
		}
	}()
	return w, nil
}

// makeLocked makes a private directory in parent and locks it. The sweep
// of another worker starting at the same time may take the new directory,
// still unlocked, for a stopped worker's and remove it between the two;
// then it tries again with a new one.
func makeLocked(parent string) (string, *os.File, error) {
	for range 5 {
		dir, err := os.MkdirTemp(parent, workspacePrefix+strconv.Itoa(os.Getpid())+"-*")
		if err != nil {
			return "", nil, err
		}
		f, err := openDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue // swept already
		}
		if err != nil {
			return "", nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			_ = f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				continue // a sweep holds it, and removes it
			}
			return "", nil, fmt.Errorf("locking %s: %w", dir, err)
		}
		fi, ferr := f.Stat()
		pi, perr := os.Lstat(dir)
		if ferr == nil && perr == nil && os.SameFile(fi, pi) {
			return dir, f, nil
		}
		_ = f.Close()
	}
	return "", nil, errors.New("every directory made was removed by another worker's sweep before it could be locked")
}

// openDir opens dir itself, never what a symlink in its place points to.
func openDir(dir string) (*os.File, error) {
	return os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
}

// sweep removes from parent the worker directories nobody holds locked
// (their worker stopped, or lost a race to lock a new one and made another)
// and legacy spool files older than staleAge; it keeps self. Only entries of this user are touched, never
// through a symlink. It returns how many directories and files it removed.
func sweep(ctx context.Context, parent, self string) (dirs, files int, err error) {
	d, err := os.Open(parent)
	if err != nil {
		return 0, 0, err
	}
	defer d.Close()
	uid := os.Geteuid()
	for ctx.Err() == nil {
		entries, rerr := d.ReadDir(sweepBatch)
		for _, e := range entries {
			name := e.Name()
			path := filepath.Join(parent, name)
			isWorker, isLegacy := strings.HasPrefix(name, workspacePrefix), strings.HasPrefix(name, legacySpoolPrefix)
			if (!isWorker && !isLegacy) || path == self {
				continue
			}
			fi, err := os.Lstat(path)
			if err != nil {
				continue
			}
			if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != uid {
				continue
			}
			switch {
			case isWorker && fi.IsDir():
				if removeUnlocked(path, fi) {
					dirs++
				}
			case isLegacy && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > staleAge:
				if os.Remove(path) == nil {
					files++
				}
			}
		}
		if errors.Is(rerr, io.EOF) {
			return dirs, files, nil
		}
		if rerr != nil {
			return dirs, files, rerr
		}
	}
	return dirs, files, ctx.Err()
}

// removeUnlocked removes the worker directory at path if no worker holds
// its lock; fi is its Lstat.
func removeUnlocked(path string, fi os.FileInfo) bool {
	f, err := openDir(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if of, err := f.Stat(); err != nil || !os.SameFile(of, fi) {
		return false // replaced since
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return false // its worker runs
	}
	return os.RemoveAll(path) == nil
}

// Dir is the private directory.
func (w *Workspace) Dir() string { return w.dir }

// createTemp creates a new file of its own in the private directory
// (O_EXCL, 0600, a random name), once it made sure the directory is still
// the one it locked.
func (w *Workspace) createTemp(pattern string) (*os.File, error) {
	if err := w.ensureDir(); err != nil {
		return nil, err
	}
	return os.CreateTemp(w.dir, pattern)
}

// mkdirTemp creates a new directory of its own in the private directory
// (0700, a random name), for the files of one manual's assembly.
func (w *Workspace) mkdirTemp(pattern string) (string, error) {
	if err := w.ensureDir(); err != nil {
		return "", err
	}
	return os.MkdirTemp(w.dir, pattern)
}

// ensureDir checks that the private directory is the one the workspace
// locked, and makes it again if something removed it (a TMPDIR cleaner
// that ignores the lock): every later export would fail until a restart
// otherwise. The name is known by then, so another user may have made it
// first: a directory found in its place is used only if it is this user's
// own, 0700, no symlink, and not locked by anyone else.
func (w *Workspace) ensureDir() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	fi, err := os.Lstat(w.dir)
	if held, herr := w.lock.Stat(); err == nil && herr == nil && os.SameFile(held, fi) {
		return nil
	}
	if err := os.Mkdir(w.dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("making the private directory again: %w", err)
	}
	if fi, err = os.Lstat(w.dir); err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || !fi.IsDir() || fi.Mode().Perm() != 0o700 || int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%w: %s was removed and made again by someone else (%v), not used", errForeignDir, w.dir, fi.Mode())
	}
	f, err := openDir(w.dir)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return fmt.Errorf("locking %s: %w", w.dir, err)
	}
	_ = w.lock.Close()
	w.lock = f
	return nil
}

// errForeignDir: the private directory was replaced by one that is not
// the worker's own.
var errForeignDir = errors.New("temporary directory refused")

// acquire takes the post-processing slot, or returns ctx's cause.
func (w *Workspace) acquire(ctx context.Context) error {
	select {
	case w.slots <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	if w.onPost != nil {
		w.onPost(1)
	}
	return nil
}

func (w *Workspace) release() {
	if w.onPost != nil {
		w.onPost(-1)
	}
	<-w.slots
}

// Close stops the sweep, waits for it, and removes the private directory
// with whatever is left in it. Call it once the handlers using the
// workspace returned; it is idempotent.
func (w *Workspace) Close() error {
	w.closeOnce.Do(func() {
		w.stopSweep()
		<-w.swept
		w.mu.Lock()
		defer w.mu.Unlock()
		w.closeErr = errors.Join(os.RemoveAll(w.dir), w.lock.Close())
	})
	return w.closeErr
}
