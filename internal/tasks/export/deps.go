package export

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/pdfexport/pdfexport/internal/lock"
	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
	"github.com/pdfexport/pdfexport/internal/storage/sidestore"
	"github.com/pdfexport/pdfexport/internal/tasks/outcome"
)

// Store is what the handler needs from artifact storage.
type Store interface {
	Stat(ctx context.Context, key string) (storage.Object, error)
	Create(ctx context.Context, key string, r io.Reader, o storage.PutOptions) (storage.Object, error)
	Replace(ctx context.Context, key, ifMatchETag string, r io.Reader, o storage.PutOptions) (storage.Object, error)
	Open(ctx context.Context, key string) (io.ReadCloser, error)
}

// Renderer prints a source to PDF and streams it to sink.
type Renderer interface {
	Render(ctx context.Context, src render.Source, s spec.PrintSettings, sink func(ctx context.Context, pdf io.Reader) error) (render.Stats, error)
}

// Gate serializes renders of one artifact across workers.
type Gate interface {
	Enter(ctx context.Context, id, staleETag string) (lock.Entry, error)
	// ForgetStored erases a stored outcome whose artifact is gone, if the
	// gate still records that etag (lock.Gate.ForgetStored).
	ForgetStored(ctx context.Context, id, etag string) (bool, error)
}

// SideStore holds what envelopes name by reference beside their task
// (sidestore.Store): source documents, source credentials, an encryption's
// passwords. Get and Owns answer only for a task that owns the data
// (sidestore.ErrNotOwner otherwise); Owns without reading it.
type SideStore interface {
	Get(ctx context.Context, owner string, ref sidestore.Ref) (sidestore.Value, error)
	Owns(ctx context.Context, owner string, ref sidestore.Ref) error
}

// Finisher ends exports (outcome.Finisher): Finish records the final state
// once, releases what the task owns, announces it and enqueues the
// callback; Recorded reads a recorded final state.
type Finisher interface {
	Finish(ctx context.Context, queue string, env *spec.Envelope, f spec.Final) (outcome.Finished, error)
	Recorded(ctx context.Context, taskID string) (spec.Final, bool, error)
}

// Cancellations tells whether an export was canceled by request, and
// whether an earlier attempt completed it before the cancel came
// (outcome.Cancels).
type Cancellations interface {
	Canceled(ctx context.Context, taskID string) (bool, error)
	StoredResult(ctx context.Context, queue, taskID string) (*spec.Result, error)
}

// Outcomes tells of an export's final state the moment it is announced
// (outcome.Listener: the process's one subscription). The watch is
// best-effort: announcements can be lost, so a caller also looks for
// itself, less often.
type Outcomes interface {
	Watch(taskID string) (*outcome.Watch, error)
}

// ErrCanceled ends an export canceled by request: final, never retried.
var ErrCanceled = errors.New(spec.CanceledError)

// Observer receives export outcomes for metrics.
type Observer interface {
	ExportDone(outcome string, d time.Duration) // rendered | reused | failed
	StorageBytes(op string, n int64)
	// RenderWait is how long a render of a task of queue waited for a tab;
	// RenderInFlight counts renders in progress by queue (+1, -1).
	RenderWait(queue string, d time.Duration)
	RenderInFlight(queue string, delta int)
}

// Config wires a Handler.
type Config struct {
	Store    Store
	Renderer Renderer
	Gate     Gate
	// Hosts are ALLOWED_HOSTS and CALLBACK_ALLOWED_HOSTS.
	Hosts spec.Hosts
	// Namespace separates lock ids of different storage locations sharing
	// one Redis; use the STORAGE_URL.
	Namespace string
	Logger    *slog.Logger
	Observer  Observer
	// SideStore resolves source.html_ref, source.credentials_ref and
	// encryption_ref; nil refuses such envelopes.
	SideStore SideStore
	// Hostname goes into the artifact's metadata; default os.Hostname.
	Hostname string
	// Finisher ends every export that becomes final; nil: nothing is
	// recorded, released or announced (tests of the render path only).
	Finisher Finisher
	// Cancellations is asked when a task starts and when its context is
	// canceled; nil: exports are never canceled by request.
	Cancellations Cancellations
	// Outcomes, when set, tells a running chapter task at once that its
	// manual ended (canceled, failed), instead of at its next look every
	// manualCheckInterval.
	Outcomes Outcomes
	// PublicURL is bin/api's base URL (API_PUBLIC_URL); when set, results
	// carry download_url.
	PublicURL string
	// MaxPages and MaxBytes bound an assembled manual (RENDER_MAX_PAGES,
	// RENDER_MAX_BYTES; the renderer bounds each chapter); 0: no limit.
	MaxPages int
	MaxBytes int64
	// ChapterConcurrency is how many chapters of a manual one task works
	// on at once (RENDER_CONCURRENCY: more would only wait for a tab).
	// Default 1.
	ChapterConcurrency int
	// ChapterTasks queues the chapters of a manual that are not stored as
	// pdf:chapter tasks, so that every worker of the fleet prints them;
	// nil: the manual's task prints them alone.
	ChapterTasks ChapterQueue
	// Progress counts a manual's stored chapters for status readers
	// (outcome.Progress); nil: none.
	Progress ProgressCounter
	// Sites reads the chapters of a source.site from its navigation; nil
	// fails such exports for good.
	Sites SiteDiscoverer
	// Workspace holds the temporary files of document options and the one
	// post-processing slot; every handler of a worker process shares one.
	// nil: the handler opens its own, which Close removes.
	Workspace *Workspace
}

// ChapterQueue queues chapter tasks (a manual's, on the manual's queue).
type ChapterQueue interface {
	EnqueueChapters(ctx context.Context, queue string, tasks []spec.ChapterTask) error
}

// SiteDiscoverer reads a site's chapters (internal/tasks/site through the
// egress guard). An error the caller cannot fix by retrying (a field of
// the site, a page that will not be there) matches spec.ErrInvalid or
// asynq.SkipRetry.
type SiteDiscoverer interface {
	Discover(ctx context.Context, s spec.Site) (Discovery, error)
}

// Discovery is a site's chapters, each with a revision, and how they were
// found.
type Discovery struct {
	Chapters []spec.Chapter
	Nav      string
	Requests int
	Elapsed  time.Duration
}

// ProgressCounter counts the stored chapters of a manual.
type ProgressCounter interface {
	Start(ctx context.Context, taskID string, total int) error
	ChapterStored(ctx context.Context, taskID, key string) error
}

// Handler processes pdf:export tasks. It is safe for concurrent use.
type Handler struct {
	cfg   Config
	hooks hooks
	// workspace is cfg.Workspace or, without one, ownWorkspace.
	workspace    *Workspace
	ownWorkspace *Workspace
}

// hooks are test seams; all nil in production.
type hooks struct {
	// afterResult runs after the result is written, before the handler
	// returns and finishes the export.
	afterResult func(ctx context.Context, taskID string)
}

// NewHandler returns a Handler; Store, Renderer and Gate are required.
func NewHandler(cfg Config) (*Handler, error) {
	if cfg.Store == nil || cfg.Renderer == nil || cfg.Gate == nil {
		return nil, errors.New("tasks: Store, Renderer and Gate are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.Hostname == "" {
		cfg.Hostname, _ = os.Hostname()
	}
	h := &Handler{cfg: cfg, workspace: cfg.Workspace}
	if h.workspace == nil {
		ws, err := OpenWorkspace(WorkspaceConfig{Logger: cfg.Logger})
		if err != nil {
			return nil, err
		}
		h.workspace, h.ownWorkspace = ws, ws
	}
	return h, nil
}

// Close removes the workspace the handler opened itself (Config.Workspace
// nil); a shared one is its opener's to close. Call it once the handler's
// tasks returned.
func (h *Handler) Close() error {
	if h.ownWorkspace == nil {
		return nil
	}
	return h.ownWorkspace.Close()
}

type nopObserver struct{}

func (nopObserver) ExportDone(string, time.Duration) {}
func (nopObserver) StorageBytes(string, int64)       {}
func (nopObserver) RenderWait(string, time.Duration) {}
func (nopObserver) RenderInFlight(string, int)       {}
