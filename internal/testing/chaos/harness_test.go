package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/render/proctree"
	"github.com/pdfexport/pdfexport/internal/testing/harness"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// full reports whether the long scenarios run (make chaos sets
// PDFEXPORT_CHAOS=full). Quick runs (make test) skip them with a message
// that says how to run them.
func full() bool { return os.Getenv("PDFEXPORT_CHAOS") == "full" }

func requireFull(t *testing.T) {
	t.Helper()
	if !full() {
		t.Skip("long scenario: runs in `make chaos` (PDFEXPORT_CHAOS=full)")
	}
}

// clusterConfig shapes a test deployment.
type clusterConfig struct {
	Workers   int
	S3        bool     // S3 storage on a private versitygw (else a file store)
	LockRedis bool     // render locks on their own Redis (LOCK_REDIS_URL)
	Env       []string // extra worker environment (LOCK_TTL=3s, …)
	MaxRetry  int      // the client's retries (0: the default 5)
	// Sentinel runs queues and locks on a Sentinel deployment (master,
	// replica, three Sentinels, all with passwords) instead of one Redis.
	Sentinel bool
	// AOF runs the Redis with appendonly yes (the production setting), so a
	// restart replays what it had.
	AOF bool
}

// cluster is a private deployment: Redis, storage, worker processes and an
// exportclient, all torn down with the test.
type cluster struct {
	t         *testing.T
	bin       string
	dir       string
	storeDir  string
	redis     *testsupport.Redis    // nil with Sentinel
	sentinel  *testsupport.Sentinel // nil without
	lockRedis *testsupport.Redis
	s3        *testsupport.S3Server
	env       []string
	client    *exportclient.Client
	rdb       redis.UniversalClient

	// failoverWindow: renders of one key beyond the first are expected
	// (a lock held on a Redis master that died unreplicated is gone), so
	// verdict counts them without failing the test.
	failoverWindow bool

	mu      sync.Mutex
	workers []*worker
	nextID  int
	procs   map[procKey]string // every process seen below a worker: pid+start time → comm
	stop    chan struct{}
	stopped chan struct{}
}

type procKey struct {
	pid   int
	start string
}

func newCluster(t *testing.T, cfg clusterConfig) *cluster {
	t.Helper()
	bin := testsupport.Binaries(t)
	c := &cluster{t: t, bin: bin, dir: t.TempDir(), procs: map[procKey]string{}, stop: make(chan struct{}), stopped: make(chan struct{})}
	var queueOpt asynq.RedisConnOpt
	if cfg.Sentinel {
		s := testsupport.StartRedisSentinel(t)
		c.sentinel = s
		c.env = append(os.Environ(), "REDIS_SENTINEL_ADDRS="+strings.Join(s.Addrs(), ","), "REDIS_SENTINEL_MASTER="+s.MasterName,
			"REDIS_PASSWORD="+s.Password, "REDIS_SENTINEL_PASSWORD="+s.SentinelPassword)
		queueOpt = asynq.RedisFailoverClientOpt{MasterName: s.MasterName, SentinelAddrs: s.Addrs(), Password: s.Password,
			SentinelPassword: s.SentinelPassword, DialTimeout: 2 * time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second}
	} else {
		var extra []string
		if cfg.AOF {
			extra = []string{"--appendonly", "yes"}
		}
		c.redis = testsupport.StartRedisWith(t, extra...)
		c.env = append(os.Environ(), "REDIS_URL="+c.redis.URL())
		queueOpt = asynq.RedisClientOpt{Addr: c.redis.Addr()}
	}
	c.rdb = queueOpt.MakeRedisClient().(redis.UniversalClient)
	t.Cleanup(func() { _ = c.rdb.Close() })
	c.env = append(c.env, "CHROMIUM_PATH="+testsupport.ChromiumPath(t),
		"LOG_FORMAT=text", "LOG_LEVEL=debug", "TASK_CHECK_INTERVAL=20ms", "RENDER_CONCURRENCY=1", "WORKER_CONCURRENCY=4")
	if cfg.LockRedis {
		c.lockRedis = testsupport.StartRedis(t)
		c.env = append(c.env, "LOCK_REDIS_URL="+c.lockRedis.URL())
	}
	if cfg.S3 {
		c.s3 = testsupport.StartS3(t)
		c.env = append(c.env, "STORAGE_URL=s3://"+c.s3.Bucket+"/chaos", "S3_ENDPOINT="+c.s3.Endpoint(),
			"S3_FORCE_PATH_STYLE=true", "S3_REGION="+c.s3.Region,
			"AWS_ACCESS_KEY_ID="+c.s3.AccessKey, "AWS_SECRET_ACCESS_KEY="+c.s3.SecretKey)
	} else {
		c.storeDir = filepath.Join(c.dir, "artifacts")
		c.env = append(c.env, "STORAGE_URL=file://"+c.storeDir)
	}
	c.env = append(c.env, cfg.Env...)
	maxRetry := cfg.MaxRetry
	if maxRetry == 0 {
		maxRetry = 5
	}
	var err error
	c.client, err = exportclient.New(exportclient.Config{Redis: queueOpt,
		AllowedHosts: envValue(c.env, "ALLOWED_HOSTS"), MaxRetry: maxRetry, Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.client.Close() })
	go c.sample()
	// Registered after the servers' cleanups, so it runs before them: the
	// workers stop while Redis and storage still serve.
	t.Cleanup(c.shutdown)
	for range cfg.Workers {
		c.startWorker()
	}
	return c
}

func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if s, ok := strings.CutPrefix(kv, name+"="); ok {
			v = s
		}
	}
	return v
}

// worker is one bin/worker process (harness.Proc: its own process group,
// output in memory).
type worker struct {
	*harness.Proc
	name  string
	admin string
}

func (w *worker) pid() int { return w.PID() }

// startWorker starts one more worker (its own TMPDIR and admin port) and
// waits for /readyz.
func (c *cluster) startWorker(extraEnv ...string) *worker {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	name := fmt.Sprintf("w%d", c.nextID)
	c.mu.Unlock()
	// A short TMPDIR of its own: Chromium's singleton socket lives in its
	// profile there, and a Unix socket path may not exceed 107 bytes.
	tmp, err := os.MkdirTemp("", "chaos-"+name+"-")
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	admin := "127.0.0.1:" + strconv.Itoa(testsupport.FreePort(c.t))
	env := append(append(append([]string(nil), c.env...), extraEnv...), "ADMIN_ADDR="+admin, "TMPDIR="+tmp)
	p, err := harness.Start(name, "", filepath.Join(c.bin, "worker"), env)
	if err != nil {
		c.t.Fatal(err)
	}
	w := &worker{Proc: p, name: name, admin: admin}
	c.mu.Lock()
	c.workers = append(c.workers, w)
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	err = harness.WaitHTTP(ctx, "http://"+admin+"/readyz", func() error {
		if w.Exited() {
			return fmt.Errorf("exited: %v", w.Err())
		}
		return nil
	})
	if err != nil {
		c.t.Fatalf("worker %s not ready: %v\n%s", name, err, w.Tail(4000))
	}
	return w
}

// live returns the workers that still run.
func (c *cluster) live() []*worker {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*worker
	for _, w := range c.workers {
		if !w.Exited() {
			out = append(out, w)
		}
	}
	return out
}

// terminate sends SIGTERM (after SIGCONT, should it be paused) and waits for
// the exit; it fails the test on a non-zero status or no exit within 60 s.
func (c *cluster) terminate(w *worker) {
	c.t.Helper()
	if err := w.Stop(60 * time.Second); err != nil {
		c.t.Errorf("worker %s after SIGTERM: %v\n%s", w.name, err, w.Tail(4000))
	}
}

// crash SIGKILLs a worker process alone (not its Chromium) and waits until it
// is gone.
func (c *cluster) crash(w *worker) {
	w.Signal(syscall.SIGKILL)
	<-w.Done()
}

// shutdown stops every live worker with SIGTERM, then checks that no
// Chromium process any worker ever had is still running and that no temp
// file is left in the file store. Leftovers are killed, so a failing test
// does not leak into the next.
func (c *cluster) shutdown() {
	for _, w := range c.live() {
		c.terminate(w)
	}
	close(c.stop)
	<-c.stopped
	if n := c.leakedProcesses(15 * time.Second); n > 0 {
		c.t.Errorf("%d Chromium processes outlived their workers", n)
	}
	if n := c.tempFiles(); n > 0 {
		c.t.Errorf("%d temp files (.tmp-*) left in the file store", n)
	}
	if c.t.Failed() {
		c.mu.Lock()
		for _, w := range c.workers {
			c.t.Logf("---- log of worker %s (pid %d) ----\n%s", w.name, w.pid(), w.Tail(6000))
		}
		c.mu.Unlock()
	}
}

// sample records, every 50 ms, every process below each live worker:
// Chromium's browser, zygotes, renderers and utilities.
func (c *cluster) sample() {
	defer close(c.stopped)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		var pids []int
		for _, w := range c.live() {
			pids = append(pids, w.pid())
		}
		for _, p := range proctree.Descendants(pids...) {
			if st, ok := proctree.Stat(p); ok && st.State != "Z" {
				c.mu.Lock()
				c.procs[procKey{p, st.StartTime}] = st.Comm
				c.mu.Unlock()
			}
		}
		select {
		case <-c.stop:
			return
		case <-tick.C:
		}
	}
}

// leakedProcesses waits up to wait for every recorded process to end and
// returns how many did not; it kills those.
func (c *cluster) leakedProcesses(wait time.Duration) int {
	c.mu.Lock()
	procs := make(map[procKey]string, len(c.procs))
	for k, v := range c.procs {
		procs[k] = v
	}
	c.mu.Unlock()
	var left []procKey
	if testsupport.Within(wait, func() error {
		left = left[:0]
		for k := range procs {
			if st, ok := proctree.Stat(k.pid); ok && st.StartTime == k.start && st.State != "Z" {
				left = append(left, k)
			}
		}
		return testsupport.Unless(len(left) == 0, "%d processes left", len(left))
	}) == nil {
		return 0
	}
	for _, k := range left {
		c.t.Logf("leaked process %d (%s)", k.pid, procs[k])
		_ = syscall.Kill(k.pid, syscall.SIGKILL)
	}
	return len(left)
}

// chromiumOf returns the browser process of a worker: its child whose
// command is Chromium.
func chromiumOf(w *worker) (int, bool) {
	for _, p := range proctree.Descendants(w.pid()) {
		st, ok := proctree.Stat(p)
		if ok && st.PPID == w.pid() && st.State != "Z" && strings.Contains(st.Comm, "chrom") {
			return p, true
		}
	}
	return 0, false
}

// tempFiles counts .tmp-* files under the file store.
func (c *cluster) tempFiles() int {
	if c.storeDir == "" {
		return 0
	}
	n := 0
	_ = filepath.WalkDir(c.storeDir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), ".tmp-") {
			c.t.Logf("temp file left: %s", path)
			n++
		}
		return nil
	})
	return n
}

// ---- exports ----

// export is one requested export and, once waited for, its final status.
type export struct {
	label  string
	key    string
	taskID string
	status exportclient.Status
	err    error
}

// page is a two-page HTML document unique to label; with ready > 0 it
// becomes printable (window.__PDF_READY__) only after that long.
func page(label string, ready time.Duration) string {
	s := `<!doctype html><title>` + label + `</title><h1>` + label + `</h1><p>chaos test page</p>` +
		`<h1 style="break-before:page">` + label + ` page two</h1>`
	if ready > 0 {
		s += fmt.Sprintf(`<script>setTimeout(() => { window.__PDF_READY__ = true }, %d)</script>`, ready.Milliseconds())
	}
	return s
}

// request builds the request of an export of label's page.
func request(label string, ready time.Duration) exportclient.Request {
	r := exportclient.Request{ManualID: "chaos-" + label, Version: "1", HTML: page(label, ready)}
	if ready > 0 {
		r.Options.WaitFor = "window.__PDF_READY__===true"
	}
	return r
}

// enqueue requests an export; retries while the queue Redis is down.
func (c *cluster) enqueue(label string, r exportclient.Request) *export {
	c.t.Helper()
	var e exportclient.Enqueued
	testsupport.Eventually(c.t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		e, err = c.client.Enqueue(ctx, r)
		if err != nil && !errors.Is(err, exportclient.ErrUnavailable) {
			c.t.Fatalf("enqueue %s: %v", label, err) // only an unreachable Redis is worth another try
		}
		if err != nil {
			return fmt.Errorf("enqueue %s: %w", label, err)
		}
		return nil
	})
	return &export{label: label, key: e.ArtifactKey, taskID: e.TaskID}
}

// waitAll waits (in parallel) until every export is final or timeout.
func (c *cluster) waitAll(exports []*export, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, e := range exports {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.status, e.err = c.client.Wait(ctx, e.taskID, 200*time.Millisecond)
		}()
	}
	wg.Wait()
}

// waitState waits until a task is in one of states.
func (c *cluster) waitState(taskID string, timeout time.Duration, states ...exportclient.State) exportclient.Status {
	c.t.Helper()
	var st exportclient.Status
	testsupport.Eventually(c.t, timeout, func() error {
		var err error
		st, err = c.client.Status(context.Background(), taskID)
		return testsupport.Unless(err == nil && slices.Contains(states, st.State), "task %s not %v (state %s, err %v)", taskID, states, st.State, err)
	})
	return st
}

// waitLog waits until one of workers logged needle and returns it.
func waitLog(t *testing.T, workers []*worker, needle string, timeout time.Duration) *worker {
	t.Helper()
	var found *worker
	testsupport.Eventually(t, timeout, func() error {
		for _, w := range workers {
			if strings.Contains(w.Output(), needle) {
				found = w
				return nil
			}
		}
		return fmt.Errorf("no worker logged %q", needle)
	})
	return found
}

// verdict checks a scenario's exports: every one completed; per key at most
// one rendered:true result outside fail-open keys; every artifact a whole PDF
// with the pages its result claims. It fills the counters of sc.
func (c *cluster) verdict(sc *Scenario, exports []*export) {
	c.t.Helper()
	sc.Exports = len(exports)
	type keyStat struct {
		renders  int
		failOpen bool
		url      string
		pages    int
		bytes    int64
	}
	keys := map[string]*keyStat{}
	for _, e := range exports {
		if e.err != nil || e.status.State != exportclient.StateCompleted || e.status.Result == nil {
			sc.Lost++
			c.t.Errorf("export %s (task %s) did not complete: state %s, error %q, wait error %v", e.label, e.taskID, e.status.State, e.status.Error, e.err)
			continue
		}
		r := e.status.Result
		k := keys[r.ArtifactKey]
		if k == nil {
			k = &keyStat{url: r.URL, pages: r.Pages, bytes: r.Bytes}
			keys[r.ArtifactKey] = k
		}
		if r.Rendered {
			k.renders++
			sc.Renders++
		}
		if r.FailOpen {
			k.failOpen = true
			sc.FailOpen++
		}
		if r.Bytes != k.bytes || r.Pages != k.pages {
			c.t.Errorf("export %s: result %d bytes %d pages, another export of %s said %d bytes %d pages", e.label, r.Bytes, r.Pages, r.ArtifactKey, k.bytes, k.pages)
		}
	}
	sc.Keys = len(keys)
	for key, k := range keys {
		if k.renders > 1 {
			sc.Duplicates += k.renders - 1
			if !k.failOpen && !c.failoverWindow {
				sc.DuplicatesOutsideFailOpen += k.renders - 1
				c.t.Errorf("%s rendered %d times outside a Redis-down window", key, k.renders)
			}
		}
		if pages, err := c.pdfPages(key, k.url); err != nil || pages != k.pages || pages < 1 {
			sc.CorruptArtifacts++
			c.t.Errorf("artifact %s: pdfinfo pages %d (result says %d): %v", key, pages, k.pages, err)
		}
	}
}

// pdfPages fetches a stored artifact (the file, or the presigned URL on S3)
// and returns pdfinfo's page count.
func (c *cluster) pdfPages(key, url string) (int, error) {
	path := ""
	if strings.HasPrefix(url, "file://") {
		path = strings.TrimPrefix(url, "file://")
	} else {
		resp, err := http.Get(url)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("GET %s: %s", key, resp.Status)
		}
		f, err := os.CreateTemp(c.dir, "download-*.pdf")
		if err != nil {
			return 0, err
		}
		defer os.Remove(f.Name())
		if _, err := io.Copy(f, resp.Body); err != nil {
			f.Close()
			return 0, err
		}
		f.Close()
		path = f.Name()
	}
	return harness.PDFPages(path)
}

// info reads the artifact's info object (<key>.json) from the file store.
func (c *cluster) info(key string) (fence int64, renderer string) {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(c.storeDir, key+".json"))
	if err != nil {
		c.t.Fatalf("info object of %s: %v", key, err)
	}
	var v struct {
		Fence    int64  `json:"fence"`
		Renderer string `json:"renderer"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		c.t.Fatalf("info object of %s: %v: %s", key, err, b)
	}
	return v.Fence, v.Renderer
}

// metric sums a counter on a worker's /metrics over the series whose labels
// contain label (e.g. `outcome="rendered"`; "" for all).
func metric(t *testing.T, w *worker, name, label string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + w.admin + "/metrics")
	if err != nil {
		t.Fatalf("metrics of %s: %v", w.name, err)
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) || (len(line) > len(name) && line[len(name)] != '{' && line[len(name)] != ' ') {
			continue
		}
		if label != "" && !strings.Contains(line, label) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

// fastForwardLease makes asynq see the lease of a crashed worker's task as
// long expired, as its clock would a minute later, so the next recoverer
// run (one runs when a worker starts) re-queues it at once. Quick runs use
// it to avoid waiting 60–120 s; full runs wait for the real expiry.
func (c *cluster) fastForwardLease(queue, taskID string) {
	c.t.Helper()
	ctx := context.Background()
	n, err := c.rdb.ZAddXX(ctx, "asynq:{"+queue+"}:lease", redis.Z{Score: float64(time.Now().Add(-2 * time.Minute).Unix()), Member: taskID}).Result()
	_ = n
	if err != nil {
		c.t.Fatalf("fast-forwarding the lease of %s: %v", taskID, err)
	}
	if s, err := c.rdb.ZScore(ctx, "asynq:{"+queue+"}:lease", taskID).Result(); err != nil || s > float64(time.Now().Unix()) {
		c.t.Fatalf("task %s has no lease to fast-forward (score %v, %v)", taskID, s, err)
	}
}

// record adds the scenario to the summary when the test ends (after the
// cluster's own checks, which may still fail it).
func record(t *testing.T, sc *Scenario) {
	start := time.Now()
	t.Cleanup(func() {
		sc.Passed = !t.Failed()
		sc.Seconds = time.Since(start).Seconds()
		t.Logf("%s: passed %v in %.0fs: exports %d lost %d renders %d keys %d duplicates %d (outside fail-open %d) fail-open %d corrupt %d leaked procs %d temp %d; %s",
			sc.Name, sc.Passed, sc.Seconds, sc.Exports, sc.Lost, sc.Renders, sc.Keys, sc.Duplicates, sc.DuplicatesOutsideFailOpen,
			sc.FailOpen, sc.CorruptArtifacts, sc.LeakedProcesses, sc.LeakedTempFiles, sc.Notes)
		recorder.Scenario(*sc)
	})
}

// leakCounter wraps a cluster's shutdown check so the scenario records the
// leaks it found.
func (c *cluster) countLeaks(sc *Scenario) {
	// Runs before the cluster's shutdown cleanup (registered later → runs
	// earlier), so stop everything here and count.
	c.t.Cleanup(func() {
		for _, w := range c.live() {
			c.terminate(w)
		}
		sc.LeakedProcesses = c.leakedProcesses(15 * time.Second)
		sc.LeakedTempFiles = c.tempFiles()
		if sc.LeakedProcesses > 0 {
			c.t.Errorf("%d Chromium processes outlived their workers", sc.LeakedProcesses)
		}
		if sc.LeakedTempFiles > 0 {
			c.t.Errorf("%d temp files left in the file store", sc.LeakedTempFiles)
		}
	})
}
