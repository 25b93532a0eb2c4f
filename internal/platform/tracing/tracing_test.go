package tracing

import (
	"context"
	"strings"
	"testing"
	"time"

	smithytracing "github.com/aws/smithy-go/tracing"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/pdfexport/pdfexport/internal/platform/tracing/tracingtest"
)

func TestFromEnv(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want Mode
		err  string // a word of the error
	}{
		{"nothing set: off", nil, Mode{}, ""},
		{"endpoint: on, http", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, Mode{On: true, Protocol: "http/protobuf"}, ""},
		{"traces endpoint: on", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, Mode{On: true, Protocol: "http/protobuf"}, ""},
		{"exporter otlp: on (the exporter's default endpoint)", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, Mode{On: true, Protocol: "http/protobuf"}, ""},
		{"exporter none beats an endpoint", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, Mode{}, ""},
		{"sdk disabled beats everything", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, Mode{}, ""},
		{"grpc", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, Mode{On: true, Protocol: "grpc"}, ""},
		{"traces protocol beats the general one", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, Mode{On: true, Protocol: "http/protobuf"}, ""},
		{"protocol of an exporter that is off is not read", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "carrier-pigeon"}, Mode{}, ""},
		{"unknown exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, Mode{}, "OTEL_TRACES_EXPORTER"},
		{"http/json is not built in", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, Mode{}, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromEnv(func(k string) string { return tt.env[k] })
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one naming %s", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("FromEnv = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// clearEnv unsets every OTEL_* variable the test process may have, and puts
// the global tracer provider and propagator back when the test ends.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, v := range append(Variables, "OTEL_BSP_SCHEDULE_DELAY", "OTEL_EXPORTER_OTLP_INSECURE") {
		t.Setenv(v, "")
	}
	t.Cleanup(func() {
		otel.SetTracerProvider(noop.NewTracerProvider())
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
		enabled.Store(false)
	})
}

// TestSetup_OffInstallsNothing: with OTEL_TRACES_EXPORTER=none (and an
// endpoint that would otherwise turn tracing on) Setup installs no provider
// and no exporter: spans do not record, nothing reaches the collector.
func TestSetup_OffInstallsNothing(t *testing.T) {
	clearEnv(t)
	c := tracingtest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.HTTPURL)
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	before := otel.GetTracerProvider()
	shutdown, err := Setup(context.Background(), ServiceWorker)
	if err != nil {
		t.Fatal(err)
	}
	if Enabled() {
		t.Error("Enabled() after Setup with tracing off")
	}
	if otel.GetTracerProvider() != before {
		t.Errorf("the global tracer provider changed to %T", otel.GetTracerProvider())
	}
	if _, isSDK := otel.GetTracerProvider().(*sdktrace.TracerProvider); isSDK {
		t.Error("an SDK tracer provider is installed")
	}
	ctx, span := otel.Tracer("test").Start(context.Background(), "nothing")
	if span.IsRecording() || span.SpanContext().IsValid() {
		t.Errorf("span recording %v, valid %v", span.IsRecording(), span.SpanContext().IsValid())
	}
	_, child := otel.Tracer("test").Start(ctx, "child")
	child.End()
	span.End()
	if sctx, s := Start(ctx, "test", "worker span"); s.IsRecording() || s.SpanContext().IsValid() || sctx != ctx {
		t.Error("Start with tracing off made a span or a new context")
	}
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := c.Requests(); n != 0 {
		t.Errorf("the collector received %d requests", n)
	}
}

// TestSetup_ExportsOverOTLP: with an endpoint (HTTP) or OTEL_TRACES_EXPORTER
// and grpc, spans reach the collector through the real exporter, with
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES on the resource, and the
// W3C propagator is installed.
func TestSetup_ExportsOverOTLP(t *testing.T) {
	for _, proto := range []string{"http/protobuf", "grpc"} {
		t.Run(proto, func(t *testing.T) {
			clearEnv(t)
			c := tracingtest.Start(t)
			if proto == "grpc" {
				t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
				t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
				t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.GRPCURL)
			} else {
				t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.HTTPURL)
				t.Setenv("OTEL_SERVICE_NAME", "pdf-test")
			}
			t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=test")
			shutdown, err := Setup(context.Background(), ServiceAPI)
			if err != nil {
				t.Fatal(err)
			}
			if !Enabled() {
				t.Error("not Enabled() after Setup")
			}
			ctx, parent := otel.Tracer("test").Start(context.Background(), "parent")
			_, child := otel.Tracer("test").Start(ctx, "child")
			child.End()
			parent.End()
			carrier := propagation.MapCarrier{}
			otel.GetTextMapPropagator().Inject(ctx, carrier)
			if !strings.HasPrefix(carrier["traceparent"], "00-"+parent.SpanContext().TraceID().String()) {
				t.Errorf("propagator wrote %v", carrier)
			}
			if err := shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			if Enabled() {
				t.Error("Enabled() after shutdown")
			}
			spans := c.Wait(t, 10*time.Second, func(s []tracingtest.Span) bool { return len(s) >= 2 })
			p, ch := tracingtest.Find(spans, "parent"), tracingtest.Find(spans, "child")
			if len(p) != 1 || len(ch) != 1 || ch[0].ParentSpanID != p[0].SpanID || ch[0].TraceID != p[0].TraceID {
				t.Fatalf("spans:\n%s", tracingtest.Tree(spans))
			}
			wantService := "pdf-test"
			if proto == "grpc" {
				wantService = ServiceAPI
			}
			if p[0].Service != wantService || p[0].Resource["deployment.environment.name"] != "test" || p[0].Resource["service.version"] == "" {
				t.Errorf("resource %v, want service.name %s", p[0].Resource, wantService)
			}
		})
	}
}

// TestSetup_SamplerFromEnv: the SDK reads OTEL_TRACES_SAMPLER itself.
func TestSetup_SamplerFromEnv(t *testing.T) {
	clearEnv(t)
	c := tracingtest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.HTTPURL)
	t.Setenv("OTEL_TRACES_SAMPLER", "always_off")
	shutdown, err := Setup(context.Background(), ServiceWorker)
	if err != nil {
		t.Fatal(err)
	}
	_, span := otel.Tracer("test").Start(context.Background(), "dropped")
	if span.IsRecording() {
		t.Error("a span records with OTEL_TRACES_SAMPLER=always_off")
	}
	span.End()
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(c.Spans()); n != 0 {
		t.Errorf("%d spans exported", n)
	}
}

func TestSetup_BadEnvironmentIsAnError(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "jaeger")
	if _, err := Setup(context.Background(), ServiceWorker); err == nil || !strings.Contains(err.Error(), "OTEL_TRACES_EXPORTER") {
		t.Fatalf("err = %v", err)
	}
	if Enabled() {
		t.Error("Enabled() after a failed Setup")
	}
}

// TestAWS: the adapter hands the AWS SDK's spans, kinds, properties and
// statuses to the OpenTelemetry provider, and the SDK's tracing.GetSpan
// finds the current span.
func TestAWS(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tr := AWS(tp).Tracer("github.com/aws/aws-sdk-go-v2/service/s3")
	ctx, span := tr.StartSpan(context.Background(), "S3.PutObject", func(o *smithytracing.SpanOptions) {
		o.Kind = smithytracing.SpanKindClient
		o.Properties.Set("rpc.method", "PutObject")
	})
	if cur, ok := smithytracing.GetSpan(ctx); !ok || cur.Name() != "S3.PutObject" {
		t.Errorf("GetSpan = %v, %v", cur, ok)
	}
	if sc := span.Context(); !sc.IsValid() {
		t.Error("invalid span context")
	}
	span.SetProperty("api.error_code", "PreconditionFailed")
	span.SetProperty("attempts", 2)
	span.SetStatus(smithytracing.SpanStatusError)
	span.End()
	got := exp.GetSpans()
	if len(got) != 1 {
		t.Fatalf("%d spans", len(got))
	}
	s := got[0]
	attrs := map[string]string{}
	for _, kv := range s.Attributes {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	if s.Name != "S3.PutObject" || s.SpanKind != trace.SpanKindClient || s.Status.Code.String() != "Error" ||
		attrs["rpc.method"] != "PutObject" || attrs["api.error_code"] != "PreconditionFailed" || attrs["attempts"] != "2" {
		t.Errorf("span %s kind %v status %v attrs %v", s.Name, s.SpanKind, s.Status, attrs)
	}
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}
