// Package chaos is the reliability suite behind make chaos. Its tests drive the real
// binaries (bin/worker, bin/enqueue, built once per test binary) against a
// private Redis and file or S3 storage and inject faults: a render holder
// SIGKILLed, SIGSTOPped past its lock TTL or SIGTERMed mid-render, Chromium
// killed, the lock Redis restarted, the S3 server down, a Finish cut between
// its final record and its callback (Redis refusing the callback's enqueue,
// then the worker SIGKILLed), and a 500-export soak with random faults. Each scenario checks that every export completes, that
// each artifact renders once outside Redis-down windows, that every stored PDF
// is whole (pdfinfo), and that no Chromium process or temp file is left. A
// table of hostile inputs goes through the CLI, the HTTP API, raw queue
// payloads and hostile pages.
//
// `go test ./internal/testing/chaos/` (and make test) runs the quick subset: the
// hostile inputs and scenarios 1, 3 and 6. PDFEXPORT_CHAOS=full (make chaos)
// runs everything, writes a JSON summary to $PDFEXPORT_CHAOS_SUMMARY, and
// the reliability command renders it into RELIABILITY.md.
//
// This file's package holds only the summary model and its markdown
// rendering; the harness lives in the _test files.
package chaos
