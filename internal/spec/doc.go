// Package spec is the wire contract of pdfexport: the request a caller
// sends (Request: the HTTP API's body, exportclient's raw payload), the
// envelope an enqueuer queues as the pdf:export task payload (Envelope,
// schema version 1, carrying references to what it stored beside the task
// instead of secrets), their validation rules, the one credentials type
// (Credentials) from a request to the egress proxy, the canonical artifact
// key, the result document a finished task writes and the final states.
//
// It depends on the standard library only (allowlists come in through the
// HostList interface, which internal/render/egress implements), so the
// public exportclient package and the worker share exactly one definition
// of what a valid request is and which artifact it names. It does not know
// about Redis, Chromium or storage.
package spec
