package export

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
)

// A manual from chapters (source.chapters) is exported in two steps:
//
//  1. Its chapters, each a job of its own under its own key
//     (spec.Envelope.ChapterKey): stored already → reused; otherwise
//     through the render gate like any export, so a chapter is printed
//     once in the whole fleet however many manuals and workers want it.
//     The task works through them ChapterConcurrency at a time; it holds
//     no tab while it waits at a chapter's gate.
//  2. The manual itself under the manual's key, through the gate too:
//     its holder downloads the stored chapters into a private directory,
//     prints the table of contents (options.toc) and assembles the PDF
//     file to file (internal/assemble), streaming it into storage (or
//     through the document options' post-processing) like a render.

// manualPlan is what the chapter step leaves for the assembly.
type manualPlan struct {
	chapters []chapterDone
}

// chapterDone is a chapter stored under its key.
type chapterDone struct {
	key      string
	pages    int
	rendered bool
	warnings []spec.Warning
}

// errManualLimit: the manual would exceed RENDER_MAX_PAGES or
// RENDER_MAX_BYTES. Never retried.
var errManualLimit = errors.New("manual over a limit")

func (h *Handler) exportManual(ctx context.Context, log *slog.Logger, p job, key string) (spec.Result, error) {
	total := len(p.Source.Chapters)
	if obj, err := h.cfg.Store.Stat(ctx, key); err == nil && (!p.Force || storedBy(ctx, obj)) {
		res, err := h.reuse(ctx, key, obj, 0, false, p.Options.Settings().FailOn)
		res.Chapters = &spec.ChapterCounts{Total: total, Reused: total}
		return res, err
	}
	log.InfoContext(ctx, "manual: storing its chapters", "chapters", total)
	plan, err := h.chapters(ctx, log, p)
	if err != nil {
		return spec.Result{}, err
	}
	p.manual = plan
	res, err := h.export(ctx, log, p, key)
	if err != nil {
		return res, err
	}
	counts := &spec.ChapterCounts{Total: total}
	for _, c := range plan.chapters {
		if c.rendered {
			counts.Rendered++
		} else {
			counts.Reused++
		}
	}
	res.Chapters = counts
	return res, nil
}

// chapters makes sure every chapter of p is stored. A chapter that fails
// for good fails the manual at once, naming it; one that fails otherwise
// lets the others go on (they stay stored for the next attempt), and the
// manual is retried.
func (h *Handler) chapters(ctx context.Context, log *slog.Logger, p job) (*manualPlan, error) {
	n := len(p.Source.Chapters)
	plan := &manualPlan{chapters: make([]chapterDone, n)}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var (
		mu        sync.Mutex
		final     error
		retryable []error
		wg        sync.WaitGroup
	)
	// The same chapter listed twice is one job; its copies take its result.
	first := map[string]int{}
	var todo []int
	for i := range n {
		k := p.ChapterKey(i)
		if _, dup := first[k]; !dup {
			first[k] = i
			todo = append(todo, i)
		}
	}
	manualTask, _ := asynq.GetTaskID(ctx)
	stored := h.fanOut(ctx, log, p, manualTask, todo)
	// The fleet takes the queued chapters from the first on; this task
	// works from the last, so the two meet rather than wait for each other
	// at the gate.
	slices.Reverse(todo)
	workers := min(max(h.cfg.ChapterConcurrency, 1), len(todo))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				key := p.ChapterKey(i)
				cj := chapterJob(p.Envelope, i, manualTask)
				if obj, ok := stored[i]; ok {
					cj.stored = &obj
				}
				res, err := h.export(ctx, log.With("chapter", i, "chapter_key", key), cj, key)
				if err == nil {
					plan.chapters[i] = chapterDone{key: key, pages: res.Pages, rendered: res.Rendered, warnings: res.Warnings}
					h.chapterStored(ctx, log, manualTask, key)
					continue
				}
				err = fmt.Errorf("source.chapters[%d] (%s): %w", i, chapterName(p.Source.Chapters[i]), err)
				mu.Lock()
				if errors.Is(err, asynq.SkipRetry) && ctx.Err() == nil {
					if final == nil {
						final = err
					}
					cancel(err)
				} else {
					retryable = append(retryable, err)
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, i := range todo {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if final != nil {
		return nil, final
	}
	if err := context.Cause(ctx); err != nil && len(retryable) == 0 {
		return nil, err
	}
	if len(retryable) > 0 {
		return nil, fmt.Errorf("%d of %d chapters not stored yet (the others are kept for the next attempt): %w", len(retryable), n, errors.Join(retryable...))
	}
	for i := range n {
		if plan.chapters[i].key == "" {
			plan.chapters[i] = plan.chapters[first[p.ChapterKey(i)]]
		}
	}
	return plan, nil
}

// fanOut records the manual's progress and queues its chapters that are
// not stored as tasks of their own, once per manual (their task ids are
// the manual's plus the index, so a retry queues nothing new). Neither is
// needed for the manual to complete: a failure is logged, not returned.
// It returns what it found stored, by chapter index.
func (h *Handler) fanOut(ctx context.Context, log *slog.Logger, p job, manualTask string, todo []int) map[int]storage.Object {
	if manualTask == "" {
		return nil
	}
	if h.cfg.Progress != nil {
		if err := h.cfg.Progress.Start(ctx, manualTask, len(todo)); err != nil {
			log.WarnContext(ctx, "recording the manual's progress failed", "err", err)
		}
	}
	if h.cfg.ChapterTasks == nil || len(todo) < 2 {
		return nil
	}
	lookCtx, looked := startStep(ctx, "manual.lookup")
	missing, stored := h.unstored(lookCtx, p, todo)
	looked(nil)
	if len(missing) == 0 {
		return stored
	}
	tasks := make([]spec.ChapterTask, len(missing))
	for k, i := range missing {
		tasks[k] = p.ChapterTask(manualTask, i)
	}
	queue, _ := asynq.GetQueueName(ctx)
	queueCtx, queued := startStep(ctx, "manual.queue")
	err := h.cfg.ChapterTasks.EnqueueChapters(queueCtx, queue, tasks)
	queued(err)
	if err != nil {
		log.WarnContext(ctx, "queuing the manual's chapters for the fleet failed; this task prints them", "err", err)
	}
	return stored
}

// unstored are the chapters of todo that storage does not have (a forced
// manual: all of them), looked up a few at a time, and what it found for
// the others.
func (h *Handler) unstored(ctx context.Context, p job, todo []int) ([]int, map[int]storage.Object) {
	if p.Force {
		return todo, nil
	}
	missing := make([]bool, len(todo))
	objs := make([]storage.Object, len(todo))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(8, len(todo)) {
		wg.Go(func() {
			for k := range next {
				obj, err := h.cfg.Store.Stat(ctx, p.ChapterKey(todo[k]))
				missing[k], objs[k] = err != nil, obj
			}
		})
	}
	for k := range todo {
		next <- k
	}
	close(next)
	wg.Wait()
	var out []int
	stored := make(map[int]storage.Object, len(todo))
	for k, i := range todo {
		if missing[k] {
			out = append(out, i)
		} else {
			stored[i] = objs[k]
		}
	}
	return out, stored
}

func (h *Handler) chapterStored(ctx context.Context, log *slog.Logger, manualTask, key string) {
	if h.cfg.Progress == nil || manualTask == "" {
		return
	}
	if err := h.cfg.Progress.ChapterStored(ctx, manualTask, key); err != nil {
		log.WarnContext(ctx, "counting a stored chapter failed", "err", err)
	}
}

// chapterName is how errors and logs name a chapter: its URL (redacted
// later with the error), or the size of its HTML.
func chapterName(c spec.Chapter) string {
	if c.URL != "" {
		return c.URL
	}
	return "inline HTML of " + strconv.Itoa(len(c.HTML)) + " bytes"
}
