package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestChaos_Soak (scenario 7): 500 exports over 50 keys on three workers (S3
// storage, locks on their own Redis) while a fault from scenarios 1–6 hits
// every ~10 s: a worker SIGKILLed (and replaced), SIGSTOPped past LOCK_TTL,
// SIGTERMed (and replaced), its Chromium killed, the lock Redis restarted,
// the S3 server down for 8 s. Every export must complete, every artifact be
// whole, and no key render twice unless one of its exports failed open.
// One key in five is a large document (stored beside its tasks, shared by
// them) and one in five a private page (per-export credentials beside each
// task): none of that data may outlive the final state of its last owner by
// more than a few seconds.
func TestChaos_Soak(t *testing.T) {
	requireFull(t)
	sc := &Scenario{Name: "7 soak: 500 exports, 50 keys, random faults", Fault: "random faults of scenarios 1–6 every ~10 s"}
	record(t, sc)
	site := privateSite(t)
	c := newCluster(t, clusterConfig{Workers: 3, S3: true, LockRedis: true, Env: []string{"LOCK_TTL=3s", "ALLOWED_HOSTS=" + site.host}})
	c.countLeaks(sc)
	side := watchSideKeys(t, c.rdb)
	const nExports, nKeys = 500, 50
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 7))
	t.Logf("soak seed %d", seed)

	var (
		mu      sync.Mutex
		exports []*export
		errs    []error
	)
	enqueued := make(chan struct{})
	go func() {
		defer close(enqueued)
		r := rand.New(rand.NewPCG(seed, 8))
		tick := time.NewTicker(200 * time.Millisecond) // 5/s: 100 s of traffic
		defer tick.Stop()
		for i := range nExports {
			<-tick.C
			k := r.IntN(nKeys)
			label := fmt.Sprintf("soak-%02d", k)
			req := request(label, time.Duration(k%4)*400*time.Millisecond)
			switch k % 5 {
			case 0: // stored beside the task: over exportclient's 32 KiB threshold
				req.HTML += "<!--" + strings.Repeat("padding ", 5<<10) + "-->"
			case 1: // a private page: credentials beside the task
				req.HTML, req.URL, req.Options.WaitFor = "", site.url+"/"+label, ""
				req.Headers = map[string]string{"Authorization": site.token(label)}
			}
			var e *export
			var err error
			for try := 0; try < 100; try++ {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				var en, enErr = c.client.Enqueue(ctx, req)
				cancel()
				if enErr == nil {
					e = &export{label: fmt.Sprintf("%s#%d", label, i), key: en.ArtifactKey, taskID: en.TaskID}
					break
				}
				err = enErr
				time.Sleep(200 * time.Millisecond)
			}
			mu.Lock()
			if e != nil {
				exports = append(exports, e)
			} else {
				errs = append(errs, err)
			}
			mu.Unlock()
		}
	}()

	kinds := map[string]int{}
	randomWorker := func() *worker {
		live := c.live()
		return live[rng.IntN(len(live))]
	}
	faults := []string{"sigkill", "sigstop", "sigterm", "chromium", "lock-redis", "s3"}
	done := false
	for !done {
		select {
		case <-enqueued:
			done = true
			continue
		case <-time.After(time.Duration(8000+rng.IntN(4000)) * time.Millisecond):
		}
		// Random order, every kind once per round of six.
		if sc.Faults%len(faults) == 0 {
			rng.Shuffle(len(faults), func(i, j int) { faults[i], faults[j] = faults[j], faults[i] })
		}
		f := faults[sc.Faults%len(faults)]
		kinds[f]++
		sc.Faults++
		t.Logf("fault %d: %s", sc.Faults, f)
		switch f {
		case "sigkill":
			c.crash(randomWorker())
			c.startWorker()
		case "sigstop":
			w := randomWorker()
			w.Signal(syscall.SIGSTOP)
			time.Sleep(9 * time.Second)
			w.Signal(syscall.SIGCONT)
		case "sigterm":
			c.terminate(randomWorker())
			c.startWorker()
		case "chromium":
			if pid, ok := chromiumOf(randomWorker()); ok {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		case "lock-redis":
			c.lockRedis.Stop()
			time.Sleep(3 * time.Second)
			c.lockRedis.Start()
		case "s3":
			c.s3.Stop()
			time.Sleep(8 * time.Second)
			c.s3.Start()
		}
	}
	for _, err := range errs {
		t.Errorf("enqueue: %v", err)
	}
	// Tasks of SIGKILLed workers come back when asynq's lease recovery sees
	// them (60–120 s after the kill).
	c.waitAll(exports, 6*time.Minute)
	c.verdict(sc, exports)
	side.record(t, sc)
	if site.refused() > 0 {
		t.Errorf("the private site refused %d requests without their export's token", site.refused())
	}
	if len(exports) != nExports {
		t.Errorf("%d of %d exports enqueued", len(exports), nExports)
	}
	names := make([]string, 0, len(kinds))
	for k, n := range kinds {
		names = append(names, fmt.Sprintf("%s×%d", k, n))
	}
	sort.Strings(names)
	retried := 0
	for _, e := range exports {
		retried += e.status.Retried
	}
	sc.Notes = fmt.Sprintf("faults %s; %d task retries; seed %d", strings.Join(names, ", "), retried, seed)
}
