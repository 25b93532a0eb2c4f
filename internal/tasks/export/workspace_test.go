package export

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// openWorkspace opens a workspace in parent, closed at the test's end.
func openWorkspace(t *testing.T, parent string) *Workspace {
	t.Helper()
	ws, err := OpenWorkspace(WorkspaceConfig{Parent: parent, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	return ws
}

// TestOpenWorkspace_PrivateDirectoryRemovedOnClose: the directory is in
// the parent, named with the fixed prefix, 0700; its files are the
// worker's own (O_EXCL, 0600); Close removes it with what is left in it.
func TestOpenWorkspace_PrivateDirectoryRemovedOnClose(t *testing.T) {
	parent := t.TempDir()
	ws := openWorkspace(t, parent)
	fi, err := os.Lstat(ws.Dir())
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 || filepath.Dir(ws.Dir()) != parent ||
		!strings.HasPrefix(filepath.Base(ws.Dir()), workspacePrefix) {
		t.Fatalf("private directory %s: %v, %v; want a 0700 directory %s* in %s", ws.Dir(), fi.Mode(), err, workspacePrefix, parent)
	}
	a, err := ws.createTemp("spool-*.pdf")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := ws.createTemp("spool-*.pdf")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if fa, _ := a.Stat(); a.Name() == b.Name() || fa.Mode().Perm() != 0o600 {
		t.Fatalf("temp files %s and %s (mode %v): want distinct names, 0600", a.Name(), b.Name(), fa.Mode())
	}
	if err := ws.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(ws.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the private directory after Close: %v", err)
	}
	if err := ws.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}

// TestOpenWorkspace_SweepsWhatStoppedWorkersLeft: a worker that starts
// removes, in the background, the private directories no running worker
// holds and legacy spool files older than a day; it leaves a running
// worker's directory, fresh legacy files, symlinks (and what they point
// to) and every other entry.
func TestOpenWorkspace_SweepsWhatStoppedWorkersLeft(t *testing.T) {
	parent := t.TempDir()
	running := openWorkspace(t, parent) // another worker, still running
	// Its own sweep of parent must be over before the leftovers are made,
	// or it removes the "killed" directory half-made.
	<-running.swept
	if err := os.WriteFile(filepath.Join(running.Dir(), "spool-1.pdf"), []byte("in use"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "keep"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	for _, e := range []struct {
		name  string
		make  func(path string) error
		stale bool // left with a mtime of two days ago
	}{
		// A killed worker's directory: nobody holds its lock any more.
		{workspacePrefix + "4242-killed", func(p string) error {
			if err := os.Mkdir(p, 0o700); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(p, "spool-9.pdf"), []byte("left"), 0o600)
		}, false},
		{workspacePrefix + "4243-symlink", func(p string) error { return os.Symlink(outside, p) }, false},
		{workspacePrefix + "4244-file", func(p string) error { return os.WriteFile(p, nil, 0o600) }, true},
		{legacySpoolPrefix + "1.pdf", func(p string) error { return os.WriteFile(p, nil, 0o600) }, true},
		{legacySpoolPrefix + "1.pdf.out", func(p string) error { return os.WriteFile(p, nil, 0o600) }, true},
		{legacySpoolPrefix + "2.pdf", func(p string) error { return os.WriteFile(p, nil, 0o600) }, false},
		{"other.pdf", func(p string) error { return os.WriteFile(p, nil, 0o600) }, true},
	} {
		p := filepath.Join(parent, e.name)
		if err := e.make(p); err != nil {
			t.Fatal(err)
		}
		if e.stale {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	ws := openWorkspace(t, parent)
	<-ws.swept
	var left []string
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		if filepath.Join(parent, e.Name()) != ws.Dir() && filepath.Join(parent, e.Name()) != running.Dir() {
			left = append(left, e.Name())
		}
	}
	want := []string{"other.pdf", legacySpoolPrefix + "2.pdf", workspacePrefix + "4243-symlink", workspacePrefix + "4244-file"} // ReadDir sorts
	if fmt.Sprint(left) != fmt.Sprint(want) {
		t.Errorf("left after the sweep: %v; want %v", left, want)
	}
	if _, err := os.Stat(filepath.Join(running.Dir(), "spool-1.pdf")); err != nil {
		t.Errorf("the running worker's spool: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Errorf("what the planted symlink points to: %v", err)
	}
}

// TestOpenWorkspace_DoesNotWaitForTheSweep: a worker's start does not read
// TMPDIR: OpenWorkspace returns while the sweep of a TMPDIR of many
// entries has not even begun (held by the test), the sweep then finishes
// on its own, and Close stops a sweep still running.
func TestOpenWorkspace_DoesNotWaitForTheSweep(t *testing.T) {
	parent := t.TempDir()
	for i := range 5000 { // another program's files
		if err := os.WriteFile(filepath.Join(parent, fmt.Sprintf("other-%05d", i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	killed := filepath.Join(parent, workspacePrefix+"4242-killed")
	for _, tc := range []struct {
		name    string
		release bool // the test lets the sweep go on; otherwise Close stops it
	}{
		{"sweep released", true},
		{"closed while sweeping", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.MkdirAll(killed, 0o700); err != nil {
				t.Fatal(err)
			}
			held, release := make(chan struct{}), make(chan struct{})
			sweepHook = func(ctx context.Context) {
				close(held)
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			t.Cleanup(func() { sweepHook = nil })
			opened := make(chan *Workspace, 1)
			go func() {
				ws, err := OpenWorkspace(WorkspaceConfig{Parent: parent, Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Error(err)
				}
				opened <- ws
			}()
			var ws *Workspace
			select {
			case ws = <-opened:
			case <-time.After(20 * time.Second):
				close(release)
				t.Fatal("OpenWorkspace waited for the sweep of TMPDIR")
			}
			if ws == nil {
				return
			}
			t.Cleanup(func() { _ = ws.Close() })
			<-held
			if _, err := os.Lstat(killed); err != nil {
				t.Fatalf("the killed worker's directory went before the sweep ran: %v", err)
			}
			if !tc.release {
				done := make(chan error, 1)
				go func() { done <- ws.Close() }()
				select {
				case err := <-done:
					if err != nil {
						t.Fatal(err)
					}
				case <-time.After(20 * time.Second):
					t.Fatal("Close did not stop the sweep")
				}
				return
			}
			close(release)
			testsupport.Eventually(t, 20*time.Second, func() error {
				_, err := os.Lstat(killed)
				return testsupport.Unless(errors.Is(err, os.ErrNotExist), "the killed worker's directory is still there (%v)", err)
			})
		})
	}
}
