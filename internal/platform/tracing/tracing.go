// Package tracing sets up OpenTelemetry tracing for a pdfexport process from
// the standard OTEL_* environment variables, and nothing else.
//
// Tracing is off unless OTEL_TRACES_EXPORTER=otlp, or an OTLP endpoint
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set;
// OTEL_TRACES_EXPORTER=none and OTEL_SDK_DISABLED=true turn it off whatever
// else is set. Off, Setup installs nothing: the global tracer provider stays
// OpenTelemetry's no-op, every span the code starts is a non-recording
// placeholder, and the instrumented clients (Redis, S3) are not wrapped.
//
// On, spans go through a batch span processor to an OTLP exporter over
// http/protobuf (the default) or grpc (OTEL_EXPORTER_OTLP_PROTOCOL or
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL). The exporters read their own
// variables (endpoint, headers, timeout, compression, certificates), the SDK
// reads OTEL_TRACES_SAMPLER(_ARG), OTEL_BSP_* and the span limits, and the
// resource takes OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES over the
// process's default service name. The W3C trace-context and baggage
// propagators are installed.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/pdfexport/pdfexport/internal/platform/buildinfo"
)

// Default service names (OTEL_SERVICE_NAME overrides them).
const (
	ServiceWorker  = "pdfexport-worker"
	ServiceAPI     = "pdfexport-api"
	ServiceEnqueue = "pdfexport-enqueue"
)

// Variables are the OTEL_* variables this package, the SDK and the OTLP
// exporters read (the most used ones; the exporters read a few more, such as
// certificate files).
var Variables = []string{
	"OTEL_SDK_DISABLED",
	"OTEL_TRACES_EXPORTER",
	"OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROTOCOL",
	"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
	"OTEL_EXPORTER_OTLP_HEADERS",
	"OTEL_EXPORTER_OTLP_TIMEOUT",
	"OTEL_SERVICE_NAME",
	"OTEL_RESOURCE_ATTRIBUTES",
	"OTEL_TRACES_SAMPLER",
	"OTEL_TRACES_SAMPLER_ARG",
}

// enabled is set once Setup installed a tracer provider.
var enabled atomic.Bool

// Enabled reports whether Setup installed a tracer provider in this process:
// the instrumentation of clients (go-redis, the AWS SDK) is added only then.
func Enabled() bool { return enabled.Load() }

// Mode is what the environment asks for.
type Mode struct {
	On       bool
	Protocol string // http/protobuf or grpc, when On
}

// FromEnv reads the OTEL_* variables through getenv (os.Getenv in Setup) and
// says whether tracing is on and over which protocol. An exporter or
// protocol this build does not have is an error naming the variable.
func FromEnv(getenv func(string) string) (Mode, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return Mode{}, nil
	}
	on := false
	if v := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); v != "" {
		for _, e := range strings.Split(v, ",") {
			switch strings.ToLower(strings.TrimSpace(e)) {
			case "none":
				return Mode{}, nil
			case "otlp":
				on = true
			default:
				return Mode{}, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: this build exports traces with otlp only (or none)", v)
			}
		}
	} else {
		on = getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	}
	if !on {
		return Mode{}, nil
	}
	name, proto := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		name, proto = "OTEL_EXPORTER_OTLP_PROTOCOL", getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch strings.TrimSpace(proto) {
	case "", "http/protobuf":
		return Mode{On: true, Protocol: "http/protobuf"}, nil
	case "grpc":
		return Mode{On: true, Protocol: "grpc"}, nil
	}
	return Mode{}, fmt.Errorf("%s=%s: must be http/protobuf or grpc", name, proto)
}

// Setup installs tracing as the OTEL_* environment asks, with serviceName
// as the service name unless OTEL_SERVICE_NAME says otherwise. The returned
// shutdown flushes the spans still buffered and stops the exporter; call it
// before the process exits (it is a no-op when tracing is off). An error
// means the environment is wrong; nothing was installed then.
func Setup(ctx context.Context, serviceName string) (shutdown func(context.Context) error, err error) {
	nop := func(context.Context) error { return nil }
	mode, err := FromEnv(os.Getenv)
	if err != nil || !mode.On {
		return nop, err
	}
	var exp sdktrace.SpanExporter
	if mode.Protocol == "grpc" {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nop, fmt.Errorf("tracing: OTLP exporter (%s): %w", mode.Protocol, err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(serviceName), semconv.ServiceVersion(buildinfo.String())),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES: after, so they win
		resource.WithTelemetrySDK(),
		resource.WithHost(),
		resource.WithProcessPID(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		_ = exp.Shutdown(ctx)
		return nop, fmt.Errorf("tracing: OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	// No sampler option: the SDK reads OTEL_TRACES_SAMPLER and
	// OTEL_TRACES_SAMPLER_ARG (default parentbased_always_on).
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	enabled.Store(true)
	return func(ctx context.Context) error {
		enabled.Store(false)
		return tp.Shutdown(ctx)
	}, nil
}

// Install makes tp the global tracer provider, with the W3C propagators,
// and marks tracing enabled, as Setup does with the OTLP exporter: for tests
// that record spans in memory. restore puts the no-op provider and an empty
// propagator back and marks tracing off.
func Install(tp trace.TracerProvider) (restore func()) {
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	enabled.Store(true)
	return func() {
		enabled.Store(false)
		otel.SetTracerProvider(noop.NewTracerProvider())
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
	}
}

// Redis adds OpenTelemetry tracing (redisotel: a client span per command
// and pipeline, without the command's arguments) to a go-redis client when
// tracing is enabled; it does nothing otherwise. Left out: dials and the
// commands of a new connection (HELLO, CLIENT SETINFO, AUTH, SELECT: the
// command that dialled includes their time) and PING, which readiness
// probes would make a root span of every few seconds.
func Redis(rdb redis.UniversalClient) error {
	if !Enabled() {
		return nil
	}
	return redisotel.InstrumentTracing(rdb,
		redisotel.WithDBStatement(false), // keys and values: tokens, documents
		redisotel.WithDialFilter(true),
		redisotel.WithCommandFilter(func(cmd redis.Cmder) bool { return redisotel.DefaultCommandFilter(cmd) || untraced(cmd) }),
		redisotel.WithCommandsFilter(func(cmds []redis.Cmder) bool {
			for _, cmd := range cmds {
				if !untraced(cmd) {
					return false
				}
			}
			return true
		}))
}

func untraced(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "ping", "hello", "client", "auth", "select", "readonly":
		return true
	}
	return false
}

// FromEnviron returns ctx with the W3C trace context of the TRACEPARENT and
// TRACESTATE variables of environ (the OpenTelemetry convention for handing
// a trace to a command), when TRACEPARENT is valid; ctx otherwise. The CLI
// uses it so that `enqueue export` run from a traced script or CI job joins
// that trace, with tracing on or off in the CLI itself.
func FromEnviron(ctx context.Context, environ []string) context.Context {
	c := propagation.MapCarrier{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "TRACEPARENT":
			c["traceparent"] = v
		case "TRACESTATE":
			c["tracestate"] = v
		}
	}
	if c["traceparent"] == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, c)
}

// Shutdown runs the shutdown Setup returned, bounded by timeout (an
// unreachable collector must not hold the process up), and reports an error
// through report.
func Shutdown(shutdown func(context.Context) error, timeout time.Duration, report func(error)) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := shutdown(ctx); err != nil && report != nil {
		report(err)
	}
}

// noSpan is a non-recording span with no span context: what a span of a
// process without tracing is.
var noSpan = trace.SpanFromContext(context.Background())

// Start starts span name with the global provider's tracer for scope when
// tracing is enabled (Setup or Install). Off, it returns ctx unchanged and
// a no-op span, allocating nothing: the worker's instrumentation costs a
// load of one flag per span. A trace context ctx already carries (one
// received in a payload) stays in ctx either way, for whatever the process
// hands on.
func Start(ctx context.Context, scope, name string) (context.Context, trace.Span) {
	if !enabled.Load() {
		return ctx, noSpan
	}
	return otel.Tracer(scope).Start(ctx, name)
}

// StartKind is Start for a span of another kind than internal (a consumer
// span); the option is built only when tracing is on.
func StartKind(ctx context.Context, scope, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	if !enabled.Load() {
		return ctx, noSpan
	}
	return otel.Tracer(scope).Start(ctx, name, trace.WithSpanKind(kind))
}
