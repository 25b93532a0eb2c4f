// Package tasks is the pdf:export handler: it decodes and validates a task,
// reuses a stored artifact when there is one, and otherwise passes the render
// gate so that exactly one worker renders each artifact while the others wait
// and reuse it. It writes the result document (spec.Result) with the task's
// ResultWriter.
//
// Bad input is archived at once (asynq.SkipRetry) with an error naming the
// field; transient failures (Redis, storage, a crashed or slow browser, a
// holder that never finished) return ordinary errors so asynq retries them
// with backoff. Nothing is stored unless the render completed under a lease
// that was still held, or under fail-open.
package tasks
