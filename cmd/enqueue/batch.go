package main

import (
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
	"golang.org/x/time/rate"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/platform/config"
	"github.com/pdfexport/pdfexport/internal/storage"
)

// batchRow is one CSV line to export.
type batchRow struct {
	line int
	req  exportclient.Request
}

// batchCounts are the batch's running totals.
type batchCounts struct {
	rows, enqueued, stored, badRows, enqueueFailed atomic.Int64
	rendered, reused, taskFailed                   atomic.Int64
}

func (c *batchCounts) line() string {
	s := fmt.Sprintf("%d rows: %d enqueued, %d already stored, %d bad rows, %d enqueue errors",
		c.rows.Load(), c.enqueued.Load(), c.stored.Load(), c.badRows.Load(), c.enqueueFailed.Load())
	if n := c.rendered.Load() + c.reused.Load() + c.taskFailed.Load(); n > 0 {
		s += fmt.Sprintf("; done: %d rendered, %d reused, %d failed", c.rendered.Load(), c.reused.Load(), c.taskFailed.Load())
	}
	return s
}

// batchFlags are the flags of enqueue batch.
type batchFlags struct {
	file, queue string
	ratePerSec  float64
	force       bool
	wait        waitFlag
	opts        exportclient.Options
	progress    string
}

func (f *batchFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.file, "file", "", "CSV with columns manual_id,version,url (header optional); a url of chapters:PATH exports the whole manual PATH lists (as export --chapters), one of site:URL the manual that site's navigation lists (as export --site); - reads stdin")
	fs.Float64Var(&f.ratePerSec, "rate", 0, "enqueue at most N tasks per second (0: no limit); also accepts N/s")
	fs.BoolVar(&f.force, "force", false, "re-render artifacts that are already stored")
	fs.Var(&f.wait, "wait", "wait until every task finished (--wait=DUR bounds the wait)")
	fs.StringVar(&f.queue, "queue", "batch", "queue for the tasks")
	fs.StringVar(&f.opts.Paper, "paper", "", "paper for every row: A4 (default), Letter, Legal, A3, A5")
	fs.BoolVar(&f.opts.Landscape, "landscape", false, "landscape for every row")
	fs.BoolVar(&f.opts.Outline, "outline", false, "document outline for every row (implies tagged)")
	fs.BoolVar(&f.opts.Tagged, "tagged", false, "tagged PDF for every row")
	fs.BoolVar(&f.opts.FastWebView, "fast-web-view", false, "linearized PDF (fast web view) for every row")
	fs.StringVar(&f.opts.WaitFor, "wait-for", "", "readiness expression for every row")
	fs.StringVar(&f.progress, "progress", "auto", "auto (bar on a terminal, a line every 5s otherwise), bar, lines")
}

func runBatch(ctx context.Context, e env, args []string) int {
	fs := flag.NewFlagSet("batch", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	var f batchFlags
	f.register(fs)
	if err := fs.Parse(normalizeRate(args)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitInvalid
	}
	in, closeIn, code := f.open(e)
	if in == nil {
		return code
	}
	defer closeIn()
	client, cfg, code := newClient(e)
	if client == nil {
		return code
	}
	defer client.Close()
	run := &batchRun{client: client, queue: f.queue, limiter: rate.NewLimiter(rate.Inf, 1)}
	if !f.force {
		if run.store, code = openBatchStore(ctx, e, cfg); run.store == nil {
			return code
		}
	}
	if f.ratePerSec > 0 {
		run.limiter = rate.NewLimiter(rate.Limit(f.ratePerSec), 1)
	}

	rows, total, badRows := readBatch(in, f.opts, f.force)
	run.counts.rows.Store(int64(total))
	for _, b := range badRows {
		run.counts.badRows.Add(1)
		fmt.Fprintln(e.stderr, b)
	}
	run.report = startProgress(ctx, e, f.progress, len(rows), &run.counts)
	taskIDs, unavailable := run.enqueueAll(ctx, rows)
	if f.wait.set && len(taskIDs) > 0 {
		waitAll(ctx, client, taskIDs, f.wait.d, &run.counts, run.report)
	}
	run.report.stop()
	fmt.Fprintf(e.stdout, "batch: %s\n", run.counts.line())
	return run.counts.exitCode(ctx, unavailable)
}

// open checks --file and --rate and opens the file (stdin for -); in is nil
// when one is bad, with the exit code.
func (f *batchFlags) open(e env) (in io.Reader, closeIn func(), code int) {
	if f.file == "" {
		fmt.Fprintln(e.stderr, "enqueue batch: --file is required (a CSV path, or - for stdin)")
		return nil, nil, exitInvalid
	}
	if f.ratePerSec < 0 {
		fmt.Fprintln(e.stderr, "enqueue batch: --rate must be ≥ 0")
		return nil, nil, exitInvalid
	}
	if f.file == "-" {
		return e.stdin, func() {}, exitOK
	}
	file, err := os.Open(f.file)
	if err != nil {
		fmt.Fprintf(e.stderr, "enqueue batch: --file: %v\n", err)
		return nil, nil, exitInvalid
	}
	return file, func() { file.Close() }, exitOK
}

// openBatchStore opens the storage the rows' artifacts are looked up in; nil
// when it cannot, with the exit code.
func openBatchStore(ctx context.Context, e env, cfg config.Config) (storage.Backend, int) {
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	store, err := storage.Open(sctx, cfg.Storage())
	if err != nil {
		fmt.Fprintf(e.stderr, "enqueue batch: storage %s: %v\n", cfg.StorageURL, err)
		return nil, exitUnavailable
	}
	return store, exitOK
}

// batchRun is one run of enqueue batch: where its rows go and what it
// counts of them.
type batchRun struct {
	client  *exportclient.Client
	store   storage.Backend // nil with --force: no row is looked up
	queue   string
	limiter *rate.Limiter
	counts  batchCounts
	report  *progressReporter
}

// enqueueAll enqueues the rows whose artifact is not stored, at the
// limiter's rate, until ctx ends. unavailable: an enqueue found Redis
// unreachable.
func (r *batchRun) enqueueAll(ctx context.Context, rows []batchRow) (taskIDs []string, unavailable bool) {
	for _, row := range rows {
		if ctx.Err() != nil {
			break
		}
		if r.store != nil && row.req.Site == nil { // a site's key is known after its discovery
			_, err := r.store.Stat(ctx, row.req.Payload().ArtifactKey())
			if err == nil {
				r.counts.stored.Add(1)
				r.report.step()
				continue
			}
		}
		if err := r.limiter.Wait(ctx); err != nil {
			break
		}
		job, err := r.client.Enqueue(ctx, row.req, exportclient.Queue(r.queue))
		if err != nil {
			if errors.Is(err, exportclient.ErrInvalid) {
				r.counts.badRows.Add(1)
			} else {
				r.counts.enqueueFailed.Add(1)
				unavailable = unavailable || errors.Is(err, exportclient.ErrUnavailable)
			}
			r.report.printf("line %d: %v", row.line, err)
			r.report.step()
			continue
		}
		taskIDs = append(taskIDs, job.TaskID)
		r.counts.enqueued.Add(1)
		r.report.step()
	}
	return taskIDs, unavailable
}

// exitCode is the batch's exit code: failed when a row or a task failed
// (unavailable when Redis was and nothing was enqueued) or ctx ended.
func (c *batchCounts) exitCode(ctx context.Context, unavailable bool) int {
	switch {
	case c.badRows.Load() > 0 || c.enqueueFailed.Load() > 0 || c.taskFailed.Load() > 0:
		if unavailable && c.enqueued.Load() == 0 {
			return exitUnavailable
		}
		return exitFailed
	case ctx.Err() != nil:
		return exitFailed
	}
	return exitOK
}

// normalizeRate accepts --rate 20/s as well as --rate 20.
func normalizeRate(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.TrimSuffix(a, "/s")
	}
	return out
}

// readBatch parses the CSV; bad rows come back as messages with their line
// number and do not stop the rest.
func readBatch(in io.Reader, opts exportclient.Options, force bool) (rows []batchRow, total int, bad []string) {
	r := csv.NewReader(in)
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	r.ReuseRecord = false
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return rows, total, bad
		}
		line, _ := r.FieldPos(0)
		var perr *csv.ParseError
		if errors.As(err, &perr) {
			total++
			bad = append(bad, fmt.Sprintf("line %d: malformed CSV: %v", perr.Line, perr.Err))
			continue
		}
		if err != nil {
			bad = append(bad, fmt.Sprintf("reading input: %v", err))
			return rows, total, bad
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if line == 1 && len(rec) > 0 && strings.EqualFold(strings.TrimSpace(rec[0]), "manual_id") {
			continue // header
		}
		total++
		if len(rec) != 3 {
			bad = append(bad, fmt.Sprintf("line %d: want 3 columns manual_id,version,url, got %d", line, len(rec)))
			continue
		}
		req := exportclient.Request{ManualID: strings.TrimSpace(rec[0]), Version: strings.TrimSpace(rec[1]),
			URL: strings.TrimSpace(rec[2]), Options: opts, Force: force}
		if path, ok := strings.CutPrefix(req.URL, "chapters:"); ok {
			chapters, err := readChaptersFile(path)
			if err != nil {
				bad = append(bad, fmt.Sprintf("line %d: chapters file %s: %v", line, path, err))
				continue
			}
			req.URL, req.Chapters = "", chapters
		} else if start, ok := strings.CutPrefix(req.URL, "site:"); ok {
			req.URL, req.Site = "", &exportclient.Site{URL: start}
		}
		rows = append(rows, batchRow{line: line, req: req})
	}
}

// waitAll polls every task until it is final or the wait ends.
func waitAll(ctx context.Context, client *exportclient.Client, ids []string, d time.Duration, counts *batchCounts, report *progressReporter) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	pending := map[string]bool{}
	for _, id := range ids {
		pending[id] = true
	}
	report.reset(len(ids), "waiting")
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for len(pending) > 0 {
		for id := range pending {
			st, err := client.Status(ctx, id)
			if err != nil || !st.Final() {
				continue
			}
			delete(pending, id)
			switch {
			case st.State == exportclient.StateFailed:
				counts.taskFailed.Add(1)
				report.printf("task %s failed: %s", id, st.Error)
			case st.Result != nil && st.Result.Rendered:
				counts.rendered.Add(1)
			default:
				counts.reused.Add(1)
			}
			report.step()
		}
		select {
		case <-ctx.Done():
			counts.taskFailed.Add(int64(len(pending)))
			report.printf("%d tasks not finished when the wait ended", len(pending))
			return
		case <-tick.C:
		}
	}
}

// progressReporter shows progress as a bar on a terminal and as a plain
// line every 5 s otherwise (logs, CI).
type progressReporter struct {
	mu     sync.Mutex
	bar    *progressbar.ProgressBar
	e      env
	counts *batchCounts
	stopc  chan struct{}
	done   chan struct{}
}

func startProgress(ctx context.Context, e env, mode string, n int, counts *batchCounts) *progressReporter {
	p := &progressReporter{e: e, counts: counts, stopc: make(chan struct{}), done: make(chan struct{})}
	useBar := mode == "bar"
	if mode == "auto" {
		if f, ok := e.stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			useBar = true
		}
	}
	if useBar {
		p.bar = progressbar.NewOptions(n, progressbar.OptionSetWriter(e.stderr), progressbar.OptionSetDescription("enqueueing"),
			progressbar.OptionShowCount(), progressbar.OptionSetItsString("rows"), progressbar.OptionShowIts(),
			progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish())
		close(p.done)
		return p
	}
	go func() {
		defer close(p.done)
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-p.stopc:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				p.printf("progress: %s", counts.line())
			}
		}
	}()
	return p
}

func (p *progressReporter) step() {
	if p.bar != nil {
		_ = p.bar.Add(1)
	}
}

func (p *progressReporter) reset(n int, desc string) {
	if p.bar != nil {
		p.bar.Reset()
		p.bar.ChangeMax(n)
		p.bar.Describe(desc)
	}
}

func (p *progressReporter) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Clear()
	}
	fmt.Fprintf(p.e.stderr, format+"\n", args...)
}

func (p *progressReporter) stop() {
	if p.bar != nil {
		_ = p.bar.Finish()
		return
	}
	close(p.stopc)
	<-p.done
}
