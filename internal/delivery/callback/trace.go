package callback

import (
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/pdfexport/pdfexport/internal/platform/tracing"
)

// With tracing enabled a delivery is an otelhttp client span under the
// caller's (the pdf:callback task's, internal/tasks/callback), and the
// receiver gets a traceparent header.

// transport wraps tr with otelhttp when tracing is enabled (off: tr as is,
// nothing added to a delivery).
func transport(tr http.RoundTripper) http.RoundTripper {
	if !tracing.Enabled() {
		return tr
	}
	return otelhttp.NewTransport(tr, otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
		return "callback POST"
	}))
}
