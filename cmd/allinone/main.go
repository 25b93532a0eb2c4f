// Command allinone runs a whole pdfexport in one process tree, as
// Gotenberg's image runs one server: a private redis-server (unless
// REDIS_URL is set), one bin/worker and bin/api, on the local store
// (STORAGE_URL) unless it names a shared one. It is what the project's
// image runs with no command, so `docker run -p 3000:3000 <image>` serves
// Gotenberg's routes on port 3000 and a compose file changes only its
// image name. Every other setting (ALLOWED_HOSTS, API_TOKEN, …) applies
// to the worker and bin/api inside as it does outside.
//
// It supervises its children: SIGTERM or SIGINT stops bin/api, then the
// worker (which finishes or hands back its tasks), then Redis; a child
// that exits on its own stops the others, and allinone exits 1. The
// children die with it (Pdeathsig) if it is killed outright. Exit codes:
// 0 stopped on a signal, 1 a child failed, 2 bad usage or a child that
// cannot start.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/pdfexport/pdfexport/internal/platform/buildinfo"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// DefaultAPIAddr is where bin/api listens inside: Gotenberg's port, on
// every interface, since a container's port is published from outside.
const DefaultAPIAddr = "0.0.0.0:3000"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "-h", "--help", "-help", "help":
			fmt.Fprintf(stdout, "pdfexport allinone %s\n\n%s", buildinfo.String(), usage)
			return exitOK
		case "--version", "-version", "version":
			fmt.Fprintln(stdout, "pdfexport allinone", buildinfo.Long())
			return exitOK
		}
		fmt.Fprintf(stderr, "allinone: unexpected argument %q (configuration is read from the environment; see --help)\n", args[0])
		return exitUsage
	}
	bins, err := findBinaries(environ)
	if err != nil {
		fmt.Fprintf(stderr, "allinone: %v\n", err)
		return exitUsage
	}
	s := &supervisor{stderr: stderr, bins: bins}
	return s.run(ctx, environ)
}

const usage = `Runs a private redis-server (unless REDIS_URL is set), one worker and the api
in one process tree: Gotenberg's routes and /v1 on API_ADDR (default ` + DefaultAPIAddr + `).

Configuration (environment variables; every worker and api variable applies
to them inside, see worker --help and api --help):
  REDIS_URL         a shared Redis instead of the private one (also REDIS_SENTINEL_ADDRS, REDIS_CLUSTER_ADDRS)
  STORAGE_URL       a shared store (s3://bucket/prefix) instead of the local folder
  API_ADDR          bin/api's listen address (default ` + DefaultAPIAddr + `)
  REDIS_SERVER_BIN  the redis-server to start (default: redis-server in PATH)
  PDFEXPORT_BIN_DIR the folder of the worker and api binaries (default: this binary's folder, else PATH)
`
