package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"time"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/delivery/manuals"
	"github.com/pdfexport/pdfexport/internal/platform/config"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// maxLinkExpiry bounds --expires: a link is a bearer credential for one
// PDF, and a long-lived one outlives the key rotations meant to end it.
const maxLinkExpiry = 366 * 24 * time.Hour

// runLink prints a signed reader download link: GET
// /v1/manuals/{manual}/{version}.pdf under API_PUBLIC_URL, signed with
// LINK_SECRET's first key. With MANUALS_FILE set, the manual must be in it
// and allow the query parameters asked for. It needs no Redis.
func runLink(_ context.Context, e env, args []string) int {
	fs := flag.NewFlagSet("link", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	var l exportclient.Link
	fs.StringVar(&l.ManualID, "manual", "", "manual id, an entry of MANUALS_FILE (required)")
	fs.StringVar(&l.Version, "version", "", "version (required)")
	fs.StringVar(&l.Paper, "paper", "", "?paper= of the link (the manual's allow_query must have paper)")
	fs.BoolVar(&l.Landscape, "landscape", false, "?landscape=true (the manual's allow_query must have landscape)")
	expires := fs.Duration("expires", exportclient.DefaultLinkTTL, "how long the link works")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitInvalid
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(e.stderr, "enqueue link: unexpected argument %q\n", fs.Arg(0))
		return exitInvalid
	}
	switch {
	case l.ManualID == "":
		fmt.Fprintln(e.stderr, "enqueue link: --manual is required")
		return exitInvalid
	case l.Version == "":
		fmt.Fprintln(e.stderr, "enqueue link: --version is required")
		return exitInvalid
	case *expires <= 0 || *expires > maxLinkExpiry:
		fmt.Fprintf(e.stderr, "enqueue link: --expires must be more than 0 and at most %s, got %s\n", maxLinkExpiry, *expires)
		return exitInvalid
	}
	cfg, err := config.Load(e.environ)
	if err != nil {
		fmt.Fprintf(e.stderr, "enqueue: %v\n", err)
		return exitInvalid
	}
	var missing []config.VarError
	if cfg.LinkSecret == "" {
		missing = append(missing, config.VarError{Var: "LINK_SECRET", Reason: "required to sign links (the same list as bin/api's)"})
	} else if _, err := spec.ParseLinkSecrets(cfg.LinkSecret); err != nil {
		missing = append(missing, config.VarError{Var: "LINK_SECRET", Reason: err.Error()}) // names the entry, never the value
	}
	if cfg.APIPublicURL == "" {
		missing = append(missing, config.VarError{Var: "API_PUBLIC_URL", Reason: "required: the base URL readers reach bin/api at"})
	}
	if len(missing) > 0 {
		fmt.Fprintf(e.stderr, "enqueue link: %v\n", &config.Error{Vars: missing})
		return exitInvalid
	}
	if cfg.ManualsFile != "" {
		if code := checkLinkManual(e, cfg, l); code != exitOK {
			return code
		}
	}
	l.Expires = time.Now().Add(*expires)
	u, err := exportclient.SignLink(cfg.APIPublicURL, cfg.LinkSecret, l)
	if err != nil {
		fmt.Fprintf(e.stderr, "enqueue link: %v\n", err)
		return exitInvalid
	}
	fmt.Fprintln(e.stdout, u)
	return exitOK
}

// checkLinkManual refuses a link bin/api would refuse: a manual that is
// not in MANUALS_FILE, a parameter its allow_query lacks, a bad version.
func checkLinkManual(e env, cfg config.Config, l exportclient.Link) int {
	hosts := spec.Hosts{Sources: cfg.Allowed}
	reg, err := manuals.Load(cfg.ManualsFile, manuals.Rules{Hosts: hosts, Queues: cfg.QueueNames()})
	if err != nil {
		fmt.Fprintf(e.stderr, "enqueue link: MANUALS_FILE %s: %v\n", cfg.ManualsFile, err)
		return exitInvalid
	}
	m, ok := reg.Get(l.ManualID)
	if !ok {
		fmt.Fprintf(e.stderr, "enqueue link: --manual: no manual %q in MANUALS_FILE %s\n", l.ManualID, cfg.ManualsFile)
		return exitInvalid
	}
	q := url.Values{}
	if l.Paper != "" {
		q.Set(manuals.QueryPaper, l.Paper)
	}
	if l.Landscape {
		q.Set(manuals.QueryLandscape, "true")
	}
	r, err := m.Request(l.Version, q)
	if err == nil {
		err = r.Validate(hosts)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "enqueue link: invalid link: %v\n", err)
		return exitInvalid
	}
	return exitOK
}
