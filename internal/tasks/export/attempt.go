package export

import (
	"context"
	"errors"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// verdict is the outcome an attempt of an export, or of one of its steps,
// comes to.
type verdict int

const (
	// verdictRetry: another attempt follows (asynq retries the task, or the
	// step's error stays retryable).
	verdictRetry verdict = iota
	// verdictCompleted: the export is done.
	verdictCompleted
	// verdictCanceled: stopped by a cancel request; final, never retried.
	verdictCanceled
	// verdictFailed: failed for good (bad input, the page's own failure).
	verdictFailed
	// verdictRequeued: the worker stopped the attempt (shutdown, asynq's
	// cancel without a cancel request): asynq puts the task back whatever
	// its retry count, so the export is not final.
	verdictRequeued
	// verdictExhausted: a retryable failure on the task's last retry.
	verdictExhausted
)

var verdictNames = [...]string{"retry", "completed", "canceled", "failed", "requeued", "exhausted"}

func (o verdict) String() string { return verdictNames[o] }

// final reports whether the export ends with this attempt: Finish records
// it and releases what the task owns; otherwise another attempt needs them.
func (o verdict) final() bool {
	return o == verdictCompleted || o == verdictCanceled || o == verdictFailed || o == verdictExhausted
}

// state is the final state a verdict records.
func (o verdict) state() string {
	switch o {
	case verdictCompleted:
		return spec.StateCompleted
	case verdictCanceled:
		return spec.StateCanceled
	}
	return spec.StateFailed
}

// notCounted is attempt.maxRetry of a step's attempt (a render, a
// post-processing), which has no retry count of its own: its outcome never
// depends on one.
const notCounted = -1

// attempt is what classify judges: an error and the state it ended in.
type attempt struct {
	// ctx is the context the work ran under: the task's, or the render
	// lease's, whose end (the lease lost) the task's context does not show.
	ctx context.Context
	// err is what the work returned; nil: it completed.
	err error
	// pageFault: err is the document's own doing (a page's HTTP 404, a
	// blocked source, a PDF over a limit), not the worker's, so running it
	// again gives the same, unless our context stopping was the cause.
	pageFault bool
	// marked reports whether a cancel request is recorded for the task
	// (a Redis read: asked only when the order below needs it). nil: none.
	marked func() bool
	// retried and maxRetry are asynq's counts for the task; maxRetry
	// notCounted for a step.
	retried, maxRetry int
}

// classify is the one place an attempt's outcome is decided; the order of
// its rules is the contract, and each rule names what it beats:
//
//  1. no error: completed;
//  2. our context canceled (not by a deadline, not by shutdown) with a
//     cancel request recorded: canceled, whatever the error (a render error
//     caused by the cancel says nothing about the document);
//  3. an error saying it was canceled before it started: canceled;
//  4. an error marked final (asynq.SkipRetry): failed for good, even during
//     shutdown (retrying cannot change it);
//  5. our context canceled otherwise (shutdown, asynq's cancel, the lease
//     lost): requeued, however retryable or document-caused the error;
//  6. the task's last retry: exhausted, final;
//  7. the document's own fault while our context ran to its end or runs:
//     failed for good, unless its deadline cut it short;
//  8. anything else: retry.
//
// A deadline (the task's TASK_TIMEOUT, the render's) is not a cancel: the
// attempt counts as a failed try (rule 6 or 8), never as the page's fault.
func classify(a attempt) verdict {
	ended := a.ctx != nil && a.ctx.Err() != nil
	stopped := ended && !errors.Is(a.ctx.Err(), context.DeadlineExceeded)
	switch {
	case a.err == nil:
		return verdictCompleted
	case stopped && context.Cause(a.ctx) == context.Canceled && a.marked != nil && a.marked():
		return verdictCanceled
	case errors.Is(a.err, ErrCanceled):
		return verdictCanceled
	case errors.Is(a.err, asynq.SkipRetry):
		return verdictFailed
	case stopped:
		return verdictRequeued
	case a.maxRetry != notCounted && a.retried >= a.maxRetry:
		return verdictExhausted
	case a.pageFault && !ended:
		return verdictFailed
	}
	return verdictRetry
}
