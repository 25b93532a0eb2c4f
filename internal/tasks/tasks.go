package tasks

import (
	"encoding/json"
	"fmt"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// The asynq task types.
const (
	// TypeExport exports one manual version: a page, or a manual of
	// chapters.
	TypeExport = "pdf:export"
	// TypeChapter prints one chapter of a manual, queued by the manual's
	// task so that every worker of the fleet can print its chapters; the
	// manual's task works through them too.
	TypeChapter = "pdf:chapter"
	// TypeCallback delivers one callback of a final export.
	TypeCallback = "pdf:callback"
	// TypeGotenbergWebhook delivers one Gotenberg webhook: the result of
	// an asynchronous Gotenberg request, or its error. bin/api serves it
	// on GotenbergWebhookQueue, which workers do not serve.
	TypeGotenbergWebhook = "gotenberg:webhook"
)

// GotenbergWebhookQueue is the queue of TypeGotenbergWebhook's tasks.
const GotenbergWebhookQueue = "gotenberg-webhooks"

// NewGotenbergWebhookTask is the gotenberg:webhook task of a delivery's
// payload, which internal/gotenberg encodes and decodes.
func NewGotenbergWebhookTask(payload []byte, opts ...asynq.Option) *asynq.Task {
	return asynq.NewTask(TypeGotenbergWebhook, payload, append([]asynq.Option{asynq.Queue(GotenbergWebhookQueue)}, opts...)...)
}

// NewExportTask is the pdf:export task of an encoded envelope
// (spec.Envelope.Encode), which only an enqueuer writes.
func NewExportTask(envelope []byte, opts ...asynq.Option) *asynq.Task {
	return asynq.NewTask(TypeExport, envelope, opts...)
}

// NewChapterTask is the pdf:chapter task of chapter c.
func NewChapterTask(c spec.ChapterTask, opts ...asynq.Option) (*asynq.Task, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("tasks: encoding %s: %w", TypeChapter, err)
	}
	return asynq.NewTask(TypeChapter, b, opts...), nil
}

// Callback is the payload of a pdf:callback task: the body is fixed when
// the export is final, so every attempt POSTs the same bytes under the same
// delivery id (webhook-id); only webhook-timestamp and the signature are
// fresh.
type Callback struct {
	URL      string `json:"url"`
	Delivery string `json:"delivery"`
	Body     []byte `json:"body"` // the JSON of a spec.Final
	// Traceparent and Tracestate are the W3C trace context of the export
	// that became final: the delivery's spans join its trace. Optional.
	Traceparent string `json:"traceparent,omitempty"`
	Tracestate  string `json:"tracestate,omitempty"`
}

// NewCallbackTask is the pdf:callback task of c.
func NewCallbackTask(c Callback, opts ...asynq.Option) (*asynq.Task, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("tasks: encoding %s: %w", TypeCallback, err)
	}
	return asynq.NewTask(TypeCallback, b, opts...), nil
}

// DecodeCallback parses a pdf:callback payload; one without a URL or a
// delivery id is malformed.
func DecodeCallback(data []byte) (Callback, error) {
	var c Callback
	if err := json.Unmarshal(data, &c); err != nil || c.URL == "" || c.Delivery == "" {
		return Callback{}, fmt.Errorf("malformed %s payload", TypeCallback)
	}
	return c, nil
}
