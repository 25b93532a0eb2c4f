// Package export is the pdf:export handler: it decodes and validates a
// task's envelope, reads what the task stored beside itself (only what it
// owns: Redis, not the envelope, says so), reuses a stored artifact when
// there is one, and otherwise passes the render gate so that exactly one
// worker renders each artifact while the others wait and reuse it. It
// writes the result document (spec.Result) with the task's ResultWriter.
//
// The package is split by concern: deps.go holds what the handler needs
// (storage, renderer, gate, the stores beside the tasks, the Finisher),
// handler.go one attempt's flow, finish.go the end of an attempt, attempt.go
// the one classifier of its outcome (classify). When an
// attempt leaves the export final (completed, failed for good, its last
// retry failed, or stopped by a cancel request at any attempt), it goes
// through the Finisher (outcome.Finisher), the one place that records the
// final state, releases what the task owns, announces it and enqueues the
// callback. An export already final (a dashboard "Run" of an archived task,
// a retry of a canceled one) ends at once and changes nothing.
//
// Bad input is archived at once (asynq.SkipRetry) with an error naming the
// field; transient failures (Redis, storage, a crashed or slow browser, a
// holder that never finished) return ordinary errors so asynq retries them
// with backoff. Nothing is stored unless the render completed under a lease
// that was still held, or under fail-open.
package export
