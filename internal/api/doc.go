// Package api is the HTTP API for API servers that are not written in Go:
// POST /v1/exports enqueues an export (the task payload as JSON, the same
// validation as exportclient), GET /v1/exports/{id} reports its state and
// result (?wait=30s: as soon as it is final), GET /v1/exports/{id}/pdf
// delivers the PDF, DELETE /v1/exports/{id} cancels it, GET /healthz answers
// 200. A POST whose artifact is stored already is answered 200 from storage
// without a task (stored.go). GET /v1/manuals/{manual_id}/{version}.pdf is a
// reader's download link of a MANUALS_FILE manual, opened by a LINK_SECRET
// signature, an API token or the manual's links: public, and answered from
// storage without Redis when the PDF is stored (links.go). With a token
// (API_TOKEN, API_CLIENTS_FILE), every other route but /healthz wants
// "Authorization: Bearer <token>", which names the client
// (internal/api/apiauth): an export belongs to the client that enqueued it, and
// another client's read, cancel, download or long-poll of it is a 404, as
// for an export that does not exist; a queue outside the client's set is a
// 403 naming it. At most MaxWaiters long-polls wait at once; more are a
// 429. Its contract is api/openapi.yaml; the tests check the two against
// each other. bin/api serves it.
package api
