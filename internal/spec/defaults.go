package spec

import (
	"strings"
	"time"
)

// Defaults an enqueuer and the workers must agree on. The workers'
// variables (internal/platform/config) and exportclient.Config both take them from
// here, so a client left at its zero values enqueues exactly what a worker
// left at its defaults expects.
const (
	// DefaultQueue is where an export goes when the caller names no queue.
	DefaultQueue = "default"
	// DefaultQueueWeights is the workers' QUEUES: the queues they serve
	// and their priority weights.
	DefaultQueueWeights = "critical=6,default=3,batch=1"
	// DefaultMaxRetry is MAX_RETRY: retries of a failed export before it is
	// archived.
	DefaultMaxRetry = 5
	// DefaultTaskTimeout is TASK_TIMEOUT: the deadline of one attempt.
	DefaultTaskTimeout = 10 * time.Minute
	// DefaultResultRetention is RESULT_RETENTION: how long a finished
	// export stays readable.
	DefaultResultRetention = 24 * time.Hour
	// DefaultSourceTTL is SOURCE_TTL: how long data stored beside an export
	// outlives it when it never finishes.
	DefaultSourceTTL = 48 * time.Hour
	// DefaultCallbackMaxRetry is CALLBACK_MAX_RETRY.
	DefaultCallbackMaxRetry = 20
)

// DefaultQueues are the queue names of DefaultQueueWeights, in its order.
func DefaultQueues() []string {
	var names []string
	for _, item := range strings.Split(DefaultQueueWeights, ",") {
		name, _, _ := strings.Cut(item, "=")
		names = append(names, name)
	}
	return names
}
