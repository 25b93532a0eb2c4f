// Package export is the pdf:export handler: it decodes and validates a
// task's envelope, reads what the task stored beside itself (only what it
// owns: Redis, not the envelope, says so), reuses a stored artifact when
// there is one, and otherwise passes the render gate so that exactly one
// worker renders each artifact while the others wait and reuse it. It
// writes the result document (spec.Result) with the task's ResultWriter.
//
// The package is split by job, the files in the order an export passes
// them:
//
//   - the task: export.go (pdf:export: one attempt's flow), beside.go (what
//     the task stored beside itself), deps.go (what the handler needs:
//     storage, renderer, gate, the stores beside the tasks, the Finisher);
//   - one page: print.go (the one conversion from a payload to what the
//     renderer prints), page.go (reuse, the render gate, render and store);
//   - a manual: manual.go (its chapters, each through the gate under its
//     own key), chapter.go (pdf:chapter: a chapter a manual queued for the
//     fleet), site.go (the chapters a docs site lists), assembly.go (the
//     manual from its stored chapters, its contents and running headers);
//   - post-processing: document.go (metadata, watermark, encryption),
//     linearize.go (fast web view), workspace.go (their temporary files),
//     info.go (the artifact's info record);
//   - the end: attempt.go (classify, the one judge of an attempt's
//     outcome), finish.go (the end of every attempt), trace.go (the spans of an attempt).
//
// When an attempt leaves the export final (completed, failed for good, its
// last retry failed, or stopped by a cancel request at any attempt), it
// goes through end (finish.go), the one place that hands the final state to the
// Finisher (outcome.Finisher), which records it, releases what the task
// owns, announces it and enqueues the callback. An export already final (a
// dashboard "Run" of an archived task, a retry of a canceled one) ends at
// once and changes nothing.
//
// Bad input is archived at once (asynq.SkipRetry) with an error naming the
// field; transient failures (Redis, storage, a crashed or slow browser, a
// holder that never finished) return ordinary errors so asynq retries them
// with backoff. Nothing is stored unless the render completed under a lease
// that was still held, or under fail-open.
package export
