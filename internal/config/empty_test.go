package config

import "testing"

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
