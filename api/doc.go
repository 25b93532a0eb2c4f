// Package api holds api/openapi.yaml, the HTTP API's contract, and checks
// the server against it. It is a module of its own (nested in the
// repository), so that the OpenAPI validator it needs (kin-openapi) is no
// requirement of the module API servers import for exportclient: the root
// module's tests record every exchange with internal/api's handler
// (internal/api/apitest, when PDFEXPORT_API_EXCHANGES is set, as `make
// test` does), and contract_test.go validates each one here.
package api
