package api

import (
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"

	"github.com/pdfexport/pdfexport/internal/platform/tracing"
)

// traced continues the caller's trace. With tracing enabled every request
// is an otelhttp server span named by its route ("POST /v1/exports"), a
// child of the request's traceparent header, and the enqueue's span (and so
// the export's) comes under it. With tracing off there are no spans, but a
// traceparent header still reaches the task payload, so the workers'
// spans join the caller's trace. A malformed header is ignored, as W3C asks
// (a malformed traceparent field in the body is a 400 instead).
func traced(h http.Handler, mux *http.ServeMux) http.Handler {
	if tracing.Enabled() {
		return otelhttp.NewHandler(h, "pdfexport-api", otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			if _, pattern := mux.Handler(r); pattern != "" {
				return pattern
			}
			return r.Method
		}))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("traceparent") != "" {
			r = r.WithContext(propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
		}
		h.ServeHTTP(w, r)
	})
}
