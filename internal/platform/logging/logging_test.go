package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

func TestWithTrace_AddsTheSpanOfTheContext(t *testing.T) {
	var buf bytes.Buffer
	log := New(&buf, "info", "json").With("task_id", "t1")
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))

	log.InfoContext(ctx, "with a span", "k", "v")
	log.Info("without a context")
	log.InfoContext(context.Background(), "without a span")

	dec := json.NewDecoder(&buf)
	var lines []map[string]any
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 3 {
		t.Fatalf("%d lines: %v", len(lines), lines)
	}
	if lines[0]["trace_id"] != tid.String() || lines[0]["span_id"] != sid.String() || lines[0]["task_id"] != "t1" || lines[0]["k"] != "v" {
		t.Errorf("line with a span: %v", lines[0])
	}
	for _, l := range lines[1:] {
		if _, ok := l["trace_id"]; ok {
			t.Errorf("line without a span has a trace_id: %v", l)
		}
	}
}
