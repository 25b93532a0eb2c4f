// Command demo runs pdfexport end to end on the embedded defaults: a private
// redis-server on a free port, two worker processes storing into
// ./var/demo/artifacts, and seven concurrent `enqueue export --wait --json`
// calls — six identical requests for the sample manual and one with other
// options. It prints who rendered and who reused, checks that every key was
// rendered exactly once and that every PDF opens. Then it exports a whole
// manual from chapters (eight linked pages of the Node.js API docs that
// Debian's nodejs package installs, served on loopback), and its next
// version with one chapter revised, which prints that chapter alone. Last,
// it stops everything it started. Run it with `make demo` (which builds
// bin/worker and bin/enqueue).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/harness"
)

const demoDir = "var/demo"

func main() {
	start := time.Now()
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "demo: FAILED: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("\ndemo: ok in %.1fs\n", time.Since(start).Seconds())
}

type export struct {
	name   string
	args   []string
	result spec.Result
	ms     int64
	err    error
}

func run() error {
	if err := prepare(); err != nil {
		return err
	}
	redisSrv, err := harness.StartRedis(context.Background(), filepath.Join(demoDir, "redis"), 0)
	if err != nil {
		return err
	}
	defer redisSrv.Stop()
	redisAddr := redisSrv.Addr()
	fmt.Printf("demo: redis-server on %s\n", redisAddr)

	var d demo
	defer d.killWorkers()
	// The docs site of the whole-manual part: Debian's Node.js API docs.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	site := &http.Server{Handler: http.FileServer(http.Dir(nodeDocs)), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = site.Serve(ln) }()
	defer site.Close()
	d.common = []string{
		"REDIS_URL=redis://" + redisAddr + "/0",
		"STORAGE_URL=file://./" + demoDir + "/artifacts",
		"LOG_FORMAT=json", "LOG_LEVEL=info",
		"WORKER_CONCURRENCY=8", "RENDER_CONCURRENCY=2",
		"ALLOWED_HOSTS=" + ln.Addr().String(),
	}
	if err := d.startWorkers(); err != nil {
		return err
	}
	if err := d.sameRequests(); err != nil {
		return err
	}
	if err := wholeManual(d.common, "http://"+ln.Addr().String()+"/"); err != nil {
		return err
	}
	return d.stopWorkers()
}

// prepare checks that the binaries are built and empties the demo's
// directory.
func prepare() error {
	for _, bin := range []string{"bin/worker", "bin/enqueue"} {
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("%s missing: run `make build` (make demo does)", bin)
		}
	}
	if err := os.RemoveAll(demoDir); err != nil {
		return err
	}
	return os.MkdirAll(filepath.Join(demoDir, "artifacts"), 0o755)
}

// demo holds the workers the demo started and the environment they and
// bin/enqueue share.
type demo struct {
	common  []string
	workers []*harness.Proc
}

// startWorkers starts two workers, each with its own admin address, and
// waits until both are ready.
func (d *demo) startWorkers() error {
	var adminAddrs []string
	for i := 1; i <= 2; i++ {
		port, err := harness.FreePort()
		if err != nil {
			return err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		adminAddrs = append(adminAddrs, addr)
		env := append(append([]string{}, d.common...), "ADMIN_ADDR="+addr)
		name := fmt.Sprintf("worker-%d", i)
		w, err := harness.Start(name, filepath.Join(demoDir, name+".log"), "bin/worker", append(os.Environ(), env...))
		if err != nil {
			return err
		}
		d.workers = append(d.workers, w)
	}
	for i, addr := range adminAddrs {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err := harness.WaitHTTP(ctx, "http://"+addr+"/readyz", nil)
		cancel()
		if err != nil {
			return fmt.Errorf("worker-%d not ready: %w (log: %s)", i+1, err, filepath.Join(demoDir, fmt.Sprintf("worker-%d.log", i+1)))
		}
	}
	fmt.Printf("demo: 2 workers ready (admin %s)\n", strings.Join(adminAddrs, ", "))
	return nil
}

// stopWorkers sends each worker SIGTERM: each must exit 0.
func (d *demo) stopWorkers() error {
	for _, w := range d.workers {
		if err := w.Stop(30 * time.Second); err != nil {
			return fmt.Errorf("%s after SIGTERM: %w (see %s)", w.Name, err, w.LogPath())
		}
	}
	d.workers = nil
	fmt.Println("demo: workers stopped cleanly (SIGTERM, exit 0)")
	return nil
}

// killWorkers stops what stopWorkers did not: whatever happened, nothing
// outlives the demo.
func (d *demo) killWorkers() {
	for _, w := range d.workers {
		_ = w.Stop(15 * time.Second)
		w.Kill()
	}
}

// sameRequests runs seven exports at once, six of them the same request,
// prints their outcomes, and checks that each key was rendered exactly once
// and that its PDF opens.
func (d *demo) sameRequests() error {
	base := []string{"export", "--manual", "acme-orbit-gateway", "--version", "2026.11.3",
		"--html-file", "examples/manual.html", "--wait-for", "window.__PDF_READY__===true", "--wait=2m", "--json"}
	var exports []*export
	for i := 1; i <= 6; i++ {
		exports = append(exports, &export{name: fmt.Sprintf("A4 #%d", i), args: base})
	}
	exports = append(exports, &export{name: "Letter landscape", args: append(append([]string{}, base...), "--paper", "Letter", "--landscape", "--outline")})

	fmt.Printf("demo: enqueueing %d exports at once with bin/enqueue export --wait --json\n", len(exports))
	var wg sync.WaitGroup
	for _, ex := range exports {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ex.run(d.common)
		}()
	}
	wg.Wait()

	renders, err := printOutcomes(exports)
	if err != nil {
		return err
	}
	return checkRenderedOnce(renders)
}

// printOutcomes prints a table of the exports and counts the renders of
// each artifact key; it fails when an export did.
func printOutcomes(exports []*export) (renders map[string]int, err error) {
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nREQUEST\tOUTCOME\tARTIFACT KEY\tBYTES\tPAGES\tRENDER MS\tWAITED MS\tTOTAL MS")
	renders = map[string]int{}
	var failures []error
	for _, ex := range exports {
		if ex.err != nil {
			failures = append(failures, fmt.Errorf("%s: %w", ex.name, ex.err))
			fmt.Fprintf(tw, "%s\tFAILED\t%v\t\t\t\t\t%d\n", ex.name, ex.err, ex.ms)
			continue
		}
		r := ex.result
		outcome := "reused"
		if r.Rendered {
			outcome = "rendered"
			renders[r.ArtifactKey]++
		} else if _, ok := renders[r.ArtifactKey]; !ok {
			renders[r.ArtifactKey] = 0
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\n", ex.name, outcome, r.ArtifactKey, r.Bytes, r.Pages, r.RenderMS, r.WaitedMS, ex.ms)
	}
	_ = tw.Flush()
	return renders, errors.Join(failures...)
}

// checkRenderedOnce checks that each of the two keys was rendered exactly
// once and that its PDF opens.
func checkRenderedOnce(renders map[string]int) error {
	keys := make([]string, 0, len(renders))
	for k := range renders {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Println("\nPDFs:")
	for _, k := range keys {
		if renders[k] != 1 {
			return fmt.Errorf("artifact %s was rendered %d times, want exactly 1", k, renders[k])
		}
		path := filepath.Join(demoDir, "artifacts", k)
		pages, err := harness.PDFPages(path)
		if err != nil {
			return err
		}
		fmt.Printf("  %s  (%d pages, pdfinfo ok)\n", path, pages)
	}
	if len(keys) != 2 {
		return fmt.Errorf("got %d distinct artifacts, want 2", len(keys))
	}
	fmt.Println("\nEvery key was rendered exactly once; every other request reused it.")
	return nil
}

func (ex *export) run(env []string) {
	start := time.Now()
	cmd := exec.Command("bin/enqueue", ex.args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	ex.ms = time.Since(start).Milliseconds()
	if err != nil {
		ex.err = fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
		return
	}
	if err := json.Unmarshal(stdout.Bytes(), &ex.result); err != nil {
		ex.err = fmt.Errorf("bad --json output %q: %w", stdout.String(), err)
	}
}

// nodeDocs is where Debian's nodejs package installs the Node.js API docs
// (make setup installs it).
const nodeDocs = "/usr/share/doc/nodejs/api"

// wholeManual exports eight linked pages of the Node.js docs as one manual
// with an outline and a table of contents, then the next version with one
// chapter revised: that chapter is printed again, the others are reused.
func wholeManual(env []string, base string) error {
	pages := []string{"dns", "errors", "events", "fs", "http", "net", "stream", "url"}
	write := func(version, revised string) (string, error) {
		var b strings.Builder
		for _, p := range pages {
			rev := "r1"
			if p == revised {
				rev = "r2"
			}
			fmt.Fprintf(&b, "%s%s.html rev=%s\n", base, p, rev)
		}
		path := filepath.Join(demoDir, "chapters-"+version+".txt")
		return path, os.WriteFile(path, []byte(b.String()), 0o644)
	}
	fmt.Printf("\ndemo: a whole manual from %d chapters of the Node.js docs (%s), then its next version with fs revised\n", len(pages), nodeDocs)
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nMANUAL\tOUTCOME\tCHAPTERS RENDERED\tREUSED\tPAGES\tBYTES\tTOTAL MS")
	var results []spec.Result
	for _, v := range []struct{ version, revised string }{{"20.1", ""}, {"20.2", "fs"}} {
		list, err := write(v.version, v.revised)
		if err != nil {
			return err
		}
		ex := &export{name: "node-api " + v.version, args: []string{"export", "--manual", "node-api", "--version", v.version,
			"--chapters", list, "--outline", "--toc", "--wait=5m", "--json"}}
		ex.run(env)
		if ex.err != nil {
			return fmt.Errorf("%s: %w (see %s/worker-*.log; make setup installs the Node.js docs)", ex.name, ex.err, demoDir)
		}
		r := ex.result
		if r.Chapters == nil {
			return fmt.Errorf("%s: the result counts no chapters", ex.name)
		}
		results = append(results, r)
		fmt.Fprintf(tw, "%s\trendered\t%d\t%d\t%d\t%d\t%d\n", ex.name, r.Chapters.Rendered, r.Chapters.Reused, r.Pages, r.Bytes, ex.ms)
	}
	_ = tw.Flush()
	if c := results[0].Chapters; c.Rendered != len(pages) {
		return fmt.Errorf("the first version printed %d of %d chapters", c.Rendered, len(pages))
	}
	if c := results[1].Chapters; c.Rendered != 1 || c.Reused != len(pages)-1 {
		return fmt.Errorf("the next version printed %d chapters and reused %d, want 1 and %d", c.Rendered, c.Reused, len(pages)-1)
	}
	for _, r := range results {
		path := filepath.Join(demoDir, "artifacts", r.ArtifactKey)
		n, err := harness.PDFPages(path)
		if err != nil {
			return err
		}
		if n != r.Pages {
			return fmt.Errorf("%s: pdfinfo counts %d pages, the result %d", path, n, r.Pages)
		}
		fmt.Printf("  %s  (%d pages with its contents and outline, pdfinfo ok)\n", path, n)
	}
	fmt.Println("\nThe revised chapter alone was printed again; the manual was assembled anew.")
	return nil
}
