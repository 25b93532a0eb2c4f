// Package worker builds and runs one pdfexport worker from its configuration:
// artifact storage, Chromium, the lock Redis and render gate, the pdf:export
// handler, the asynq server and the admin HTTP server. It is the one place
// they are wired, for cmd/worker, the benchmark and the tests. Start brings
// them up in dependency order (storage, the private temporary directory,
// Chromium, locks, queue server, admin); Shutdown takes them down in the
// reverse order.
package worker
