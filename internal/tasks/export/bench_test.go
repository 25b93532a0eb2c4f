package export

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"

	"github.com/pdfexport/pdfexport/internal/lock"
	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
	"github.com/pdfexport/pdfexport/internal/tasks"
)

// memStore keeps what is stored in memory.
type memStore struct {
	mu   sync.Mutex
	objs map[string]storage.Object
	data map[string][]byte
}

func (m *memStore) Stat(_ context.Context, key string) (storage.Object, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.objs[key]; ok {
		return o, nil
	}
	return storage.Object{}, storage.ErrNotFound
}

func (m *memStore) Create(_ context.Context, key string, r io.Reader, _ storage.PutOptions) (storage.Object, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return storage.Object{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objs[key]; ok {
		return storage.Object{}, storage.ErrExists
	}
	o := storage.Object{Key: key, Size: int64(len(b)), ETag: strconv.Itoa(len(m.objs) + 1)}
	m.objs[key] = o
	if m.data == nil {
		m.data = map[string][]byte{}
	}
	m.data[key] = b
	return o, nil
}

func (m *memStore) Replace(ctx context.Context, key, _ string, r io.Reader, o storage.PutOptions) (storage.Object, error) {
	m.mu.Lock()
	delete(m.objs, key)
	m.mu.Unlock()
	return m.Create(ctx, key, r, o)
}

func (m *memStore) Open(_ context.Context, key string) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.data[key]
	if !ok {
		return nil, storage.ErrNotFound
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// pdfRenderer streams a fixed PDF into the sink, as a render that took no
// time.
type pdfRenderer struct{ pdf []byte }

func (p pdfRenderer) Render(ctx context.Context, _ render.Source, _ spec.PrintSettings, sink func(context.Context, io.Reader) error) (render.Stats, error) {
	return render.Stats{Pages: 1, Bytes: int64(len(p.pdf))}, sink(ctx, bytes.NewReader(p.pdf))
}

// openGate lets every caller through without a lock (as when Redis is down).
type openGate struct{}

func (openGate) Enter(context.Context, string, string) (lock.Entry, error) {
	return lock.Entry{Result: lock.FailOpen}, nil
}
func (openGate) ForgetStored(context.Context, string, string) (bool, error) { return false, nil }

// benchmarkProcessTask runs the pdf:export handler on every path it takes
// for a new artifact — decode, validation, key, stat, gate, "render",
// upload, info object, result — with storage, renderer and gate in memory,
// so that what is left is the handler's own work: the part tracing adds to.
// Each iteration exports a new version (a render, not a reuse).
func benchmarkProcessTask(b *testing.B) {
	h, err := NewHandler(Config{Store: &memStore{objs: map[string]storage.Object{}}, Renderer: pdfRenderer{pdf: bytes.Repeat([]byte("%PDF-1.7 "), 1000)},
		Gate: openGate{}, Logger: slog.New(slog.DiscardHandler), Hostname: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = h.Close() })
	payloads := make([][]byte, b.N)
	for i := range payloads {
		p := spec.Envelope{V: 1, ManualID: "ops-guide", Version: "1." + strconv.Itoa(i), Source: spec.EnvelopeSource{HTML: "<h1>Manual</h1>"},
			RequestID: "bench"}
		payloads[i], _ = p.Encode()
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := h.ProcessTask(ctx, tasks.NewExportTask(payloads[i])); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProcessTask: the handler with tracing off (the global no-op
// provider, as a process without OTEL_* variables runs). Run it on this
// tree and on the commit before tracing to compare; BenchmarkProcessTaskTraced
// (internal/export, tracing_bench_test.go) is the same with spans recorded.
func BenchmarkProcessTask(b *testing.B) { benchmarkProcessTask(b) }
