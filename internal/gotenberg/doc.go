// Package gotenberg serves Gotenberg 8's HTTP routes (the Chromium and
// PDF-engine modules' multipart forms, /health, /version) on bin/api, so
// that an API server calling Gotenberg through its client library switches
// by changing the base URL. A conversion is an export like any other: it
// is validated by exportclient, enqueued, rendered once per distinct
// document behind the worker's render gate, and the PDF is streamed back
// from storage. The artifact's version is a SHA-256 over every uploaded
// file and the normalized options, so identical conversions share one
// artifact; a URL's content can change, so URL routes render afresh unless
// the caller opts in to reuse (reuse.go).
//
// docs/GOTENBERG.md lists every route and form field, what is supported,
// and why the rest is refused.
package gotenberg
