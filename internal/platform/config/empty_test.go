package config

import (
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// TestLoad_EmptyMeansOff: ADMIN_ADDR and BATCH_QUEUES set to "" turn their
// feature off, as their help says, instead of taking the default.
func TestLoad_EmptyMeansOff(t *testing.T) {
	c, err := Load([]string{"ADMIN_ADDR=", "BATCH_QUEUES="})
	if err != nil {
		t.Fatal(err)
	}
	if c.AdminAddr != "" || c.BatchQueues != "" || len(c.BatchQueueSet) != 0 {
		t.Errorf("ADMIN_ADDR %q, BATCH_QUEUES %q (%v): want both off", c.AdminAddr, c.BatchQueues, c.BatchQueueSet)
	}
	d, err := Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.AdminAddr != "127.0.0.1:9090" || len(d.BatchQueueSet) != 1 || d.BatchQueueSet[0] != "batch" {
		t.Errorf("defaults: ADMIN_ADDR %q, batch queues %v", d.AdminAddr, d.BatchQueueSet)
	}
	if _, err := Load([]string{"BATCH_QUEUES=nightly"}); err == nil {
		t.Error("a batch queue not on QUEUES was accepted")
	}
}

// TestLoad_SharedDefaults: the settings an enqueuer shares take the spec
// constants, whether the variable is unset or empty, and a value given wins.
func TestLoad_SharedDefaults(t *testing.T) {
	for _, environ := range [][]string{nil, {"MAX_RETRY=", "TASK_TIMEOUT=", "RESULT_RETENTION=", "SOURCE_TTL=", "CALLBACK_MAX_RETRY=", "QUEUES="}} {
		c, err := Load(environ)
		if err != nil {
			t.Fatal(err)
		}
		if c.MaxRetry != spec.DefaultMaxRetry || c.TaskTimeout != spec.DefaultTaskTimeout || c.ResultRetention != spec.DefaultResultRetention ||
			c.SourceTTL != spec.DefaultSourceTTL || c.CallbackMaxRetry != spec.DefaultCallbackMaxRetry || c.Queues != spec.DefaultQueueWeights {
			t.Errorf("Load(%q) = %+v: want the spec defaults", environ, c)
		}
	}
	c, err := Load([]string{"MAX_RETRY=2", "TASK_TIMEOUT=90s"})
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxRetry != 2 || c.TaskTimeout != 90*time.Second {
		t.Errorf("MAX_RETRY=2 TASK_TIMEOUT=90s gave %d, %s", c.MaxRetry, c.TaskTimeout)
	}
	for _, v := range Variables() {
		if v.Name == "TASK_TIMEOUT" && v.Default != "10m" || v.Name == "SOURCE_TTL" && v.Default != "48h" || v.Name == "MAX_RETRY" && v.Default != "5" {
			t.Errorf("%s documented default %q", v.Name, v.Default)
		}
	}
}
