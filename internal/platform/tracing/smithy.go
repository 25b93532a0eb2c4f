package tracing

import (
	"context"
	"fmt"

	smithytracing "github.com/aws/smithy-go/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// AWS returns the tracer provider for the AWS SDK's own instrumentation
// (s3.Options.TracerProvider): the SDK starts a client span per operation
// (S3.PutObject, S3.UploadPart, …) with its attributes (rpc.*, retries,
// error codes), and this adapter hands them to tp. The SDK's tracing is the
// maintained instrumentation of aws-sdk-go-v2 (the contrib otelaws module is
// deprecated); its official OpenTelemetry adapter is a separate module, of
// which this is the few lines the worker needs.
func AWS(tp trace.TracerProvider) smithytracing.TracerProvider { return awsProvider{tp} }

type awsProvider struct{ tp trace.TracerProvider }

func (p awsProvider) Tracer(scope string, _ ...smithytracing.TracerOption) smithytracing.Tracer {
	return awsTracer{p.tp.Tracer(scope)}
}

type awsTracer struct{ t trace.Tracer }

func (t awsTracer) StartSpan(ctx context.Context, name string, opts ...smithytracing.SpanOption) (context.Context, smithytracing.Span) {
	var o smithytracing.SpanOptions
	for _, opt := range opts {
		opt(&o)
	}
	ctx, span := t.t.Start(ctx, name, trace.WithSpanKind(awsKind(o.Kind)), trace.WithAttributes(awsAttributes(o.Properties.Values())...))
	s := awsSpan{name: name, s: span}
	// The SDK's middlewares find the current span with tracing.GetSpan.
	return smithytracing.WithSpan(ctx, s), s
}

type awsSpan struct {
	name string
	s    trace.Span
}

func (s awsSpan) Name() string { return s.name }

func (s awsSpan) Context() smithytracing.SpanContext {
	sc := s.s.SpanContext()
	return smithytracing.SpanContext{TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String(), IsRemote: sc.IsRemote()}
}

func (s awsSpan) AddEvent(name string, opts ...smithytracing.EventOption) {
	var o smithytracing.EventOptions
	for _, opt := range opts {
		opt(&o)
	}
	s.s.AddEvent(name, trace.WithAttributes(awsAttributes(o.Properties.Values())...))
}

func (s awsSpan) SetStatus(st smithytracing.SpanStatus) {
	switch st {
	case smithytracing.SpanStatusOK:
		s.s.SetStatus(codes.Ok, "")
	case smithytracing.SpanStatusError:
		s.s.SetStatus(codes.Error, "")
	}
}

func (s awsSpan) SetProperty(k, v any) {
	if kv, ok := awsAttribute(k, v); ok {
		s.s.SetAttributes(kv)
	}
}

func (s awsSpan) End() { s.s.End() }

func awsKind(k smithytracing.SpanKind) trace.SpanKind {
	switch k {
	case smithytracing.SpanKindClient:
		return trace.SpanKindClient
	case smithytracing.SpanKindServer:
		return trace.SpanKindServer
	case smithytracing.SpanKindProducer:
		return trace.SpanKindProducer
	case smithytracing.SpanKindConsumer:
		return trace.SpanKindConsumer
	}
	return trace.SpanKindInternal
}

func awsAttributes(props map[any]any) []attribute.KeyValue {
	if len(props) == 0 {
		return nil
	}
	kvs := make([]attribute.KeyValue, 0, len(props))
	for k, v := range props {
		if kv, ok := awsAttribute(k, v); ok {
			kvs = append(kvs, kv)
		}
	}
	return kvs
}

func awsAttribute(k, v any) (attribute.KeyValue, bool) {
	key, ok := k.(string)
	if !ok {
		return attribute.KeyValue{}, false
	}
	switch v := v.(type) {
	case string:
		return attribute.String(key, v), true
	case bool:
		return attribute.Bool(key, v), true
	case int:
		return attribute.Int(key, v), true
	case int64:
		return attribute.Int64(key, v), true
	case int32:
		return attribute.Int64(key, int64(v)), true
	case float64:
		return attribute.Float64(key, v), true
	case []string:
		return attribute.StringSlice(key, v), true
	case fmt.Stringer:
		return attribute.String(key, v.String()), true
	}
	return attribute.KeyValue{}, false
}
