// Package tracingtest is an in-process OTLP trace receiver for tests: an
// HTTP server (OTLP/HTTP protobuf, POST /v1/traces) and a gRPC server
// (TraceService/Export) on 127.0.0.1 that keep every span they receive, so
// a test can point the real exporters at it through the OTEL_* variables
// and check the span tree.
package tracingtest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, flattened.
type Span struct {
	Service      string            // the resource's service.name
	Resource     map[string]string // the resource's attributes
	TraceID      string            // hex
	SpanID       string
	ParentSpanID string // "" for a root
	Name         string
	Kind         tracepb.Span_SpanKind
	Attributes   map[string]string // values as text
	Events       []string          // names
	Links        []string          // linked span ids
	Error        bool              // status code error
	StatusMsg    string
	Start, End   time.Time
}

// Collector receives spans over OTLP/HTTP (HTTPURL) and OTLP/gRPC (GRPCURL).
type Collector struct {
	HTTPURL string // http://127.0.0.1:port: an OTEL_EXPORTER_OTLP_ENDPOINT
	GRPCURL string // http://127.0.0.1:port, for OTEL_EXPORTER_OTLP_PROTOCOL=grpc

	mu       sync.Mutex
	spans    []Span
	requests int
	changed  chan struct{} // closed and replaced when spans arrive
}

// Start runs a collector until the test ends.
func Start(t testing.TB) *Collector {
	t.Helper()
	c := &Collector{changed: make(chan struct{})}

	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(c.serveHTTP), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(hl) }()
	t.Cleanup(func() { _ = hs.Close() })
	c.HTTPURL = "http://" + hl.Addr().String()

	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	collectorpb.RegisterTraceServiceServer(gs, grpcReceiver{c: c})
	go func() { _ = gs.Serve(gl) }()
	t.Cleanup(gs.Stop)
	c.GRPCURL = "http://" + gl.Addr().String()
	return c
}

func (c *Collector) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(io.LimitReader(body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		http.Error(w, "Content-Type must be application/x-protobuf, got "+ct, http.StatusUnsupportedMediaType)
		return
	}
	var req collectorpb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.add(&req)
	out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

type grpcReceiver struct {
	collectorpb.UnimplementedTraceServiceServer
	c *Collector
}

func (g grpcReceiver) Export(_ context.Context, req *collectorpb.ExportTraceServiceRequest) (*collectorpb.ExportTraceServiceResponse, error) {
	g.c.add(req)
	return &collectorpb.ExportTraceServiceResponse{}, nil
}

func (c *Collector) add(req *collectorpb.ExportTraceServiceRequest) {
	var got []Span
	for _, rs := range req.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		service := res["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{Service: service, Resource: res, TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					Name: s.GetName(), Kind: s.GetKind(), Attributes: attrs(s.GetAttributes()),
					Error: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR, StatusMsg: s.GetStatus().GetMessage(),
					Start: time.Unix(0, int64(s.GetStartTimeUnixNano())), End: time.Unix(0, int64(s.GetEndTimeUnixNano()))}
				if p := s.GetParentSpanId(); len(p) > 0 && !bytes.Equal(p, make([]byte, 8)) {
					sp.ParentSpanID = hex.EncodeToString(p)
				}
				for _, e := range s.GetEvents() {
					sp.Events = append(sp.Events, e.GetName())
				}
				for _, l := range s.GetLinks() {
					sp.Links = append(sp.Links, hex.EncodeToString(l.GetSpanId()))
				}
				got = append(got, sp)
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests++
	c.spans = append(c.spans, got...)
	close(c.changed)
	c.changed = make(chan struct{})
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = text(kv.GetValue())
	}
	return m
}

func text(v *commonpb.AnyValue) string {
	switch v := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return v.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(v.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(v.BoolValue)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(v.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_ArrayValue:
		var parts []string
		for _, e := range v.ArrayValue.GetValues() {
			parts = append(parts, text(e))
		}
		return strings.Join(parts, ",")
	}
	return ""
}

// Spans returns every span received so far.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.spans)
}

// Requests counts the export requests received.
func (c *Collector) Requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests
}

// Wait returns the spans once done(spans) holds, or fails the test after
// timeout with what it has.
func (c *Collector) Wait(t testing.TB, timeout time.Duration, done func([]Span) bool) []Span {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		spans, changed := slices.Clone(c.spans), c.changed
		c.mu.Unlock()
		if done(spans) {
			return spans
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("collector: condition not met after %s; %d spans:\n%s", timeout, len(spans), Tree(spans))
			return nil
		}
	}
}

// Find returns the spans named name.
func Find(spans []Span, name string) []Span {
	var out []Span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// Descends reports whether s is ancestor or a descendant of it in spans.
func Descends(spans []Span, s, ancestor Span) bool {
	byID := make(map[string]Span, len(spans))
	for _, x := range spans {
		byID[x.SpanID] = x
	}
	for cur, hops := s, 0; hops < 64; hops++ {
		if cur.SpanID == ancestor.SpanID {
			return true
		}
		p, ok := byID[cur.ParentSpanID]
		if !ok {
			return false
		}
		cur = p
	}
	return false
}

// Tree renders spans as an indented tree per trace, for failure messages.
func Tree(spans []Span) string {
	children := map[string][]Span{}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanID] = true
	}
	var roots []Span
	for _, s := range spans {
		if s.ParentSpanID == "" || !ids[s.ParentSpanID] {
			roots = append(roots, s)
		} else {
			children[s.ParentSpanID] = append(children[s.ParentSpanID], s)
		}
	}
	var b strings.Builder
	var walk func(s Span, depth int)
	walk = func(s Span, depth int) {
		fmt.Fprintf(&b, "%s%s [%s] trace=%s span=%s parent=%s err=%v events=%v\n", strings.Repeat("  ", depth), s.Name, s.Service,
			s.TraceID, s.SpanID, s.ParentSpanID, s.Error, s.Events)
		kids := children[s.SpanID]
		slices.SortFunc(kids, func(a, b Span) int { return a.Start.Compare(b.Start) })
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	slices.SortFunc(roots, func(a, b Span) int { return a.Start.Compare(b.Start) })
	for _, r := range roots {
		walk(r, 0)
	}
	return b.String()
}
