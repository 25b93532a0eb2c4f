package lock

import "strings"

// Status is how a holder's render ended.
type Status string

const (
	// StatusStored means the artifact is in storage; waiters reuse it.
	StatusStored Status = "stored"
	// StatusFailed means the holder gave up; one waiter takes over.
	StatusFailed Status = "failed"
)

// Outcome is what a release announces and leaves in the done marker.
type Outcome struct {
	Status Status
	ETag   string // set with StatusStored
}

func (o Outcome) encode() string {
	if o.Status == StatusStored {
		return string(StatusStored) + ":" + o.ETag
	}
	return string(o.Status)
}

func decodeOutcome(s string) (Outcome, bool) {
	status, etag, _ := strings.Cut(s, ":")
	switch Status(status) {
	case StatusStored:
		return Outcome{Status: StatusStored, ETag: etag}, true
	case StatusFailed:
		return Outcome{Status: StatusFailed}, true
	}
	return Outcome{}, false
}
