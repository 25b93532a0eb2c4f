package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	gonet "net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/delivery/manuals"
	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/render/proctree"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
	"github.com/pdfexport/pdfexport/internal/testing/harness"
)

// fileServerEnv makes the bench binary the baseline of section L: Go's
// http.FileServer serving a directory (the value) on the address of
// fileServerAddrEnv, in a process of its own as bin/api is.
const (
	fileServerEnv     = "PDFEXPORT_BENCH_FILESERVER_DIR"
	fileServerAddrEnv = "PDFEXPORT_BENCH_FILESERVER_ADDR"
)

func fileServerMain() int {
	srv := &http.Server{Addr: os.Getenv(fileServerAddrEnv), Handler: http.FileServer(http.Dir(os.Getenv(fileServerEnv))),
		ReadHeaderTimeout: 5 * time.Second}
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// Section L's settings: the PDF size (a short manual), the readers
// clicking at once, how long each round loads the server, the rounds per
// server (interleaved), and the POSTs whose commands are counted.
const (
	linkPDFBytes    = 256 << 10
	linkReaders     = 8
	linkRoundFor    = 4 * time.Second
	linkRounds      = 3
	linkPostSamples = 1000
	linkQuickRounds = 1
)

// linksResult is section L.
type linksResult struct {
	variants []linkFigures // the file server first
	// postCmds are the Redis commands of one POST /v1/exports answered
	// from storage; postQueuedCmds those of a POST of the same request
	// with force (enqueued; the worker's share not counted: no worker).
	postCmds, postQueuedCmds float64
	postMS                   dist    // latency of the cache-hit POST
	postCPUPer1k             float64 // bin/api's CPU-seconds per 1,000 cache-hit POSTs
	pdfBytes, readers        int
	roundFor                 time.Duration
}

type linkFigures struct {
	label       string
	rps         dist    // hits per second, one value per round
	lat         dist    // every request's latency, ms
	cpuPer1k    dist    // server process CPU-seconds per 1,000 hits, per round
	redisPerHit float64 // Redis commands per hit, all rounds
	hits        int
	errors      int
}

// scenarioLinks (L): a reader's click on the download link of a stored
// PDF, served by one bin/api process (file storage, a signed link and a
// public one), against Go's http.FileServer serving the same file in a
// process of its own: the limit of serving a file over HTTP. Rounds are
// interleaved; each round has linkReaders keep-alive clients fetch the
// whole PDF as fast as they can for linkRoundFor. Redis commands are
// counted by INFO commandstats from a CONFIG RESETSTAT (the measuring
// INFO and CONFIG left out); CPU is the server process's utime+stime.
func scenarioLinks(ctx context.Context, e *benchEnv, rep *report) error {
	l := &linksBench{ctx: ctx, e: e, dir: filepath.Join(e.work, "links")}
	if err := l.storeArtifacts(); err != nil {
		return err
	}
	db := e.nextDB()
	l.apiAddr, l.fsAddr = freeAddr(), freeAddr()
	if l.apiAddr == "" || l.fsAddr == "" {
		return fmt.Errorf("no free port")
	}
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	secret := "whsec_" + base64.StdEncoding.EncodeToString(k)
	var err error
	l.api, err = harness.Start("links-api", filepath.Join(l.dir, "api.log"), filepath.Join(e.o.bin, "api"), []string{
		"REDIS_URL=" + e.redis.URL(db), "STORAGE_URL=file://" + l.artifacts, "API_ADDR=" + l.apiAddr, "API_TOKEN=" + linksAPIToken,
		"MANUALS_FILE=" + l.manualsFile, "LINK_SECRET=" + secret, "ALLOWED_HOSTS=docs.example.com", "LOG_LEVEL=warn", "LOG_FORMAT=json"})
	if err != nil {
		return err
	}
	defer l.api.Kill()
	fsrv, err := l.startFileServer()
	if err != nil {
		return err
	}
	defer fsrv.Kill()
	if err := waitReady(ctx, "http://"+l.apiAddr+"/healthz", l.api, 30*time.Second); err != nil {
		return err
	}
	if err := waitReady(ctx, "http://"+l.fsAddr+"/"+l.fileName, fsrv, 30*time.Second); err != nil {
		return err
	}
	signed, err := exportclient.SignLink("http://"+l.apiAddr, secret, exportclient.Link{ManualID: "ops-guide", Version: "2026.11", Expires: time.Now().Add(24 * time.Hour)})
	if err != nil {
		return err
	}
	ropt, err := redis.ParseURL(e.redis.URL(db))
	if err != nil {
		return err
	}
	l.meter = redis.NewClient(ropt)
	defer l.meter.Close()
	if err := l.meter.Ping(ctx).Err(); err != nil {
		return err
	}
	targets := []linkTarget{
		{"Go http.FileServer, same file (the limit)", "http://" + l.fsAddr + "/" + l.fileName, fsrv},
		{"bin/api, signed link (HMAC checked)", signed, l.api},
		{"bin/api, public link", "http://" + l.apiAddr + "/v1/manuals/public-guide/2026.11.pdf", l.api},
	}
	l.res = &linksResult{pdfBytes: len(l.pdf), readers: linkReaders, roundFor: linkRoundFor}
	if err := l.readLinks(targets); err != nil {
		return err
	}
	if err := l.posts(); err != nil {
		return err
	}
	rep.links = l.res
	return nil
}

// linksAPIToken is bin/api's bearer token in scenario L.
const linksAPIToken = "bench-api-token-0123456789"

// linksBench is one run of scenario L: the stored artifacts, the two
// servers and the Redis client that counts bin/api's commands.
type linksBench struct {
	ctx               context.Context
	e                 *benchEnv
	dir, artifacts    string
	manualsFile       string
	pdf               []byte
	fileDir, fileName string // the stored PDF the file server serves too
	apiAddr, fsAddr   string
	api               *harness.Proc
	meter             *redis.Client
	res               *linksResult
}

// linkTarget is one server of a round and the URL of the PDF it serves.
type linkTarget struct {
	label, url string
	proc       *harness.Proc
}

// storeArtifacts writes the manuals file and stores the PDF of both
// manuals (a signed one and a public one) with their info objects.
func (l *linksBench) storeArtifacts() error {
	l.artifacts = filepath.Join(l.dir, "artifacts")
	if err := os.MkdirAll(l.artifacts, 0o755); err != nil {
		return err
	}
	hosts, err := hostsOf("docs.example.com")
	if err != nil {
		return err
	}
	l.manualsFile = filepath.Join(l.dir, "manuals.yaml")
	if err := os.WriteFile(l.manualsFile, []byte("manuals:\n"+
		"  ops-guide: {url: \"https://docs.example.com/ops-guide/{version}/print\", options: {outline: true}}\n"+
		"  public-guide: {url: \"https://docs.example.com/public/{version}/print\", options: {outline: true}, links: public}\n"), 0o600); err != nil {
		return err
	}
	reg, err := manuals.Load(l.manualsFile, manuals.Rules{Hosts: hosts})
	if err != nil {
		return err
	}
	l.pdf = benchPDF(linkPDFBytes)
	store, err := storage.NewFile(l.artifacts, "")
	if err != nil {
		return err
	}
	var keys []string
	for _, id := range []string{"ops-guide", "public-guide"} {
		m, _ := reg.Get(id)
		r, err := m.Request("2026.11", nil)
		if err != nil {
			return err
		}
		obj, err := store.Create(l.ctx, r.ArtifactKey(), bytes.NewReader(l.pdf), storage.PutOptions{Metadata: map[string]string{"manual-id": id, "version": "2026.11"}})
		if err != nil {
			return err
		}
		info := fmt.Sprintf(`{"etag":%q,"pages":22,"bytes":%d}`, obj.ETag, obj.Size)
		if _, err := store.Create(l.ctx, r.ArtifactKey()+".json", strings.NewReader(info), storage.PutOptions{}); err != nil {
			return err
		}
		keys = append(keys, r.ArtifactKey())
	}
	// The file server serves the very file bin/api reads.
	l.fileDir = filepath.Dir(filepath.Join(l.artifacts, keys[0]))
	l.fileName = filepath.Base(keys[0])
	return nil
}

// startFileServer starts this binary as the file server of the stored PDF.
func (l *linksBench) startFileServer() (*harness.Proc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return harness.Start("links-fileserver", filepath.Join(l.dir, "fileserver.log"), self,
		append(os.Environ(), fileServerEnv+"="+l.fileDir, fileServerAddrEnv+"="+l.fsAddr))
}

// readLinks measures the targets' rounds, interleaved, after each answered
// the whole PDF once; a failed request fails the scenario.
func (l *linksBench) readLinks(targets []linkTarget) error {
	res := l.res
	for _, t := range targets {
		if err := fetchOnce(l.ctx, t.url, len(l.pdf)); err != nil {
			return fmt.Errorf("%s: %w", t.label, err)
		}
		res.variants = append(res.variants, linkFigures{label: t.label})
	}
	rounds := linkRounds
	if l.e.o.quick {
		rounds = linkQuickRounds
	}
	redisCmds := make([]int64, len(targets))
	for round := range rounds {
		for i, t := range targets {
			cmds, err := l.readRound(round, t, &res.variants[i])
			if err != nil {
				return err
			}
			if t.proc == l.api {
				redisCmds[i] += cmds
			}
		}
	}
	for i := range res.variants {
		if targets[i].proc == l.api {
			res.variants[i].redisPerHit = float64(redisCmds[i]) / float64(max(res.variants[i].hits, 1))
		}
		if res.variants[i].errors > 0 {
			return fmt.Errorf("%s: %d failed requests: %w", res.variants[i].label, res.variants[i].errors, errScenario)
		}
	}
	return nil
}

// readRound is one round of one target into v; it returns the Redis
// commands counted meanwhile.
func (l *linksBench) readRound(round int, t linkTarget, v *linkFigures) (int64, error) {
	if err := l.meter.ConfigResetStat(l.ctx).Err(); err != nil {
		return 0, err
	}
	_, cpu0 := proctree.CPU(t.proc.PID())
	n, errs, lat, wall, err := loadRound(l.ctx, t.url, len(l.pdf), linkReaders, linkRoundFor)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", t.label, err)
	}
	_, cpu1 := proctree.CPU(t.proc.PID())
	cmds, err := commandCount(l.ctx, l.meter)
	if err != nil {
		return 0, err
	}
	v.rps = append(v.rps, float64(n)/wall.Seconds())
	v.lat = append(v.lat, lat...)
	v.cpuPer1k = append(v.cpuPer1k, (cpu1-cpu0).Seconds()/float64(max(n, 1))*1000)
	v.hits += n
	v.errors += errs
	logf("   round %d, %s: %.0f req/s, p50 %.2f ms, p99 %.2f ms, %d errors", round+1, t.label, float64(n)/wall.Seconds(), dist(lat).pct(50), dist(lat).pct(99), errs)
	return cmds, nil
}

// linksExportBody is the JSON export request of the stored ops guide.
const linksExportBody = `{"v":1,"manual_id":"ops-guide","version":"2026.11","source":{"url":"https://docs.example.com/ops-guide/2026.11/print"},"options":{"outline":true}}`

// post sends b to bin/api's POST /v1/exports and returns the status code.
func (l *linksBench) post(b string) (int, error) {
	req, _ := http.NewRequestWithContext(l.ctx, "POST", "http://"+l.apiAddr+"/v1/exports", strings.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+linksAPIToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// posts measures the POST path: the same request as a JSON export,
// answered from storage, then (force) enqueued, one at a time.
func (l *linksBench) posts() error {
	if code, err := l.post(linksExportBody); err != nil || code != http.StatusOK { // warms the connection up
		return fmt.Errorf("POST of a stored artifact: %d %v, want 200", code, err)
	}
	res := l.res
	for _, force := range []bool{false, true} {
		b, want := linksExportBody, http.StatusOK
		if force {
			b = strings.Replace(linksExportBody, `"options"`, `"force":true,"options"`, 1)
			want = http.StatusAccepted
		}
		if err := l.meter.ConfigResetStat(l.ctx).Err(); err != nil {
			return err
		}
		_, cpu0 := proctree.CPU(l.api.PID())
		for range linkPostSamples {
			t0 := time.Now()
			code, err := l.post(b)
			if err != nil || code != want {
				return fmt.Errorf("POST (force %v): %d %v, want %d", force, code, err, want)
			}
			if !force {
				res.postMS = append(res.postMS, float64(time.Since(t0).Microseconds())/1000)
			}
		}
		_, cpu1 := proctree.CPU(l.api.PID())
		cmds, err := commandCount(l.ctx, l.meter)
		if err != nil {
			return err
		}
		if force {
			res.postQueuedCmds = float64(cmds) / linkPostSamples
		} else {
			res.postCPUPer1k = (cpu1 - cpu0).Seconds() / linkPostSamples * 1000
			res.postCmds = float64(cmds) / linkPostSamples
		}
	}
	logf("   POST answered from storage: %.2f Redis commands, %.3f CPU-s/1,000, %s; queued (force, enqueue only): %.2f", res.postCmds, res.postCPUPer1k, res.postMS.pcts(" ms"), res.postQueuedCmds)
	return nil
}

func hostsOf(list string) (spec.Hosts, error) {
	l, err := allowlist.Parse(list)
	return spec.Hosts{Sources: l}, err
}

// benchPDF is n bytes shaped like a PDF (its content is not parsed).
func benchPDF(n int) []byte {
	b := make([]byte, n)
	copy(b, "%PDF-1.7\n")
	for i := 9; i < n-6; i++ {
		b[i] = byte('a' + i%26)
	}
	copy(b[n-6:], "%%EOF\n")
	return b
}

func freeAddr() string {
	ln, err := (&gonet.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return ""
	}
	defer ln.Close()
	return ln.Addr().String()
}

func fetchOnce(ctx context.Context, url string, size int) error {
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, _ := io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK || int(n) != size {
		return fmt.Errorf("GET %s: %d, %d bytes, want 200 and %d", url, resp.StatusCode, n, size)
	}
	return nil
}

// loadRound has readers keep-alive clients GET url for d; it returns the
// hits, the failed requests, each hit's latency in ms and the wall time.
func loadRound(ctx context.Context, url string, size, readers int, d time.Duration) (int, int, []float64, time.Duration, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: readers, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var mu sync.Mutex
	var lat []float64
	hits, errs := 0, 0
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 64<<10)
			var mine []float64
			bad := 0
			for time.Now().Before(deadline) && ctx.Err() == nil {
				t0 := time.Now()
				req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
				resp, err := client.Do(req)
				if err != nil {
					bad++
					continue
				}
				n, _ := io.CopyBuffer(io.Discard, resp.Body, buf)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || int(n) != size {
					bad++
					continue
				}
				mine = append(mine, float64(time.Since(t0).Microseconds())/1000)
			}
			mu.Lock()
			lat = append(lat, mine...)
			hits += len(mine)
			errs += bad
			mu.Unlock()
		}()
	}
	wg.Wait()
	return hits, errs, lat, time.Since(start), ctx.Err()
}

// commandCount sums INFO commandstats' calls, the measurement's own INFO
// and CONFIG left out.
func commandCount(ctx context.Context, rdb *redis.Client) (int64, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, err
	}
	var n int64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok || name == "cmdstat_info" || strings.HasPrefix(name, "cmdstat_config") {
			continue
		}
		c, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
		n += c
	}
	return n, nil
}

func (r *linksResult) rows() []row {
	if len(r.variants) == 0 {
		return nil
	}
	base := r.variants[0]
	var rows []row
	for _, v := range r.variants[1:] {
		ratio := v.rps.median() / base.rps.median()
		rows = append(rows, row{"L", "reader link of a stored PDF: " + v.label,
			fmt.Sprintf("%s req/s; p50 %.2f ms, p99 %.2f ms; %.2f Redis commands/hit; %.3f CPU-s/1,000 hits", num(v.rps.median()), v.lat.pct(50), v.lat.pct(99), v.redisPerHit, v.cpuPer1k.median()),
			fmt.Sprintf("%s: %s req/s; p50 %.2f ms, p99 %.2f ms; %.3f CPU-s/1,000", base.label, num(base.rps.median()), base.lat.pct(50), base.lat.pct(99), base.cpuPer1k.median()),
			fmt.Sprintf("%.2f× the file server", ratio),
			fmt.Sprintf("≥ 0.7× the file server, ≤ 2 commands/hit — %s", verdict(ratio >= 0.7 && v.redisPerHit <= 2))})
	}
	rows = append(rows, row{"L", "POST /v1/exports whose artifact is stored (answered 200 from storage)",
		fmt.Sprintf("%.2f Redis commands/POST; latency %s; bin/api %.3f CPU-s/1,000 POSTs", r.postCmds, r.postMS.pcts(" ms"), r.postCPUPer1k),
		fmt.Sprintf("the same POST with force, enqueue only (no worker): %.2f commands; a queued cache hit end to end: 52–62 (section 10)", r.postQueuedCmds),
		"", fmt.Sprintf("≤ 10 commands — %s", verdict(r.postCmds <= 10))})
	return rows
}

func (r *linksResult) markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("\n## L. Reader links: a stored PDF answered without the queue\n\n")
	w("One bin/api process (file storage) answers `GET /v1/manuals/{manual_id}/{version}.pdf` for a stored PDF of %d KiB; the ", r.pdfBytes>>10)
	w("limit is Go's `http.FileServer` serving the same file, in a process of its own. Each round has %d keep-alive readers ", r.readers)
	w("fetch the whole PDF as fast as they can for %s; rounds are interleaved (file server, signed, public). The load ", r.roundFor)
	w("generator runs on the same cores as the server. CPU is the server process's; Redis commands are counted by INFO ")
	w("commandstats from a CONFIG RESETSTAT.\n\n")
	w("| server | req/s: median (min–max) over rounds | p50 | p99 | Redis commands/hit | CPU-s per 1,000 hits | vs file server |\n|---|---|---|---|---|---|---|\n")
	base := r.variants[0].rps.median()
	for _, v := range r.variants {
		rc := "–"
		if v.redisPerHit > 0 || !strings.HasPrefix(v.label, "Go ") {
			rc = fmt.Sprintf("%.2f", v.redisPerHit)
		}
		w("| %s | %s | %.2f ms | %.2f ms | %s | %.3f | %.2f× |\n", mdCell(v.label), v.rps.mmm(""), v.lat.pct(50), v.lat.pct(99), rc, v.cpuPer1k.median(), v.rps.median()/base)
	}
	w("\nPOST /v1/exports of the same request (one at a time, %d each): answered from storage (200, one `SET` of the ", linkPostSamples)
	w("stored export's record) **%.2f Redis commands** per POST, latency %s, bin/api %.3f CPU-s per 1,000 POSTs (10 ms ", r.postCmds, r.postMS.pcts(" ms"), r.postCPUPer1k)
	w("ticks over %d POSTs: coarse); the same request with `force`, enqueued ", linkPostSamples)
	w("(202; the enqueue alone, no worker ran): %.2f commands. A queued cache hit end to end (enqueue, pick-up, handler, ", r.postQueuedCmds)
	w("result, final record) costs 52–62 commands and 8–9 Lua scripts (section 10, over its runs).\n")
	return b.String()
}
