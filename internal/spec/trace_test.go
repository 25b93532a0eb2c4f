package spec_test

import (
	"strings"
	"testing"

	. "github.com/pdfexport/pdfexport/internal/spec"
)

func TestValidate_TraceContext(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tests := []struct {
		name, traceparent, tracestate string
		field                         string // "" accepts
	}{
		{"none", "", "", ""},
		{"sampled", tp, "", ""},
		{"not sampled", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", "", ""},
		{"with tracestate", tp, "rojo=00f067aa0ba902b7, congo=t61rcWkgMzE", ""},
		{"future version with more fields", "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes", "", ""},
		{"upper-case hex", strings.ToUpper(tp), "", "traceparent"},
		{"version ff", "ff" + tp[2:], "", "traceparent"},
		{"zero trace id", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "", "traceparent"},
		{"zero parent id", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "", "traceparent"},
		{"short", tp[:54], "", "traceparent"},
		{"version 00 with more", tp + "-x", "", "traceparent"},
		{"garbage", "hello", "", "traceparent"},
		{"tracestate alone", "", "congo=t61rcWkgMzE", "tracestate"},
		{"tracestate not a list", tp, "just words", "tracestate"},
		{"tracestate control character", tp, "congo=t61\nrcWkgMzE", "tracestate"},
		{"tracestate too long", tp, "a=" + strings.Repeat("b", MaxTracestateBytes), "tracestate"},
		{"tracestate too many members", tp, strings.Repeat("k=v,", 33), "tracestate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validPayload()
			p.Traceparent, p.Tracestate = tt.traceparent, tt.tracestate
			err := p.Validate(Hosts{Sources: testAllowed})
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.field != "" && FirstField(err) != tt.field:
				t.Fatalf("err = %v, want one naming %s", err, tt.field)
			}
		})
	}
}

// TestDecode_TraceContext: the fields travel in the payload JSON and an
// encoded payload without them has neither key (a worker of an earlier
// release, which rejects unknown fields, still reads it).
func TestDecode_TraceContext(t *testing.T) {
	p, err := DecodeEnvelope([]byte(`{"v":1,"manual_id":"m","version":"1","source":{"html":"x"},` +
		`"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"congo=t61rcWkgMzE"}`))
	if err != nil {
		t.Fatal(err)
	}
	if p.Traceparent != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" || p.Tracestate != "congo=t61rcWkgMzE" {
		t.Errorf("decoded %q, %q", p.Traceparent, p.Tracestate)
	}
	p.Traceparent, p.Tracestate = "", ""
	b, _ := p.Encode()
	if strings.Contains(string(b), "trace") {
		t.Errorf("encoded without a trace context: %s", b)
	}
}
