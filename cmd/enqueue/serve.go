package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/pdfexport/pdfexport/internal/api"
	"github.com/pdfexport/pdfexport/internal/config"
	"github.com/pdfexport/pdfexport/internal/logging"
)

// runServe is an alias of bin/api: the same handler on --addr (default
// API_ADDR).
func runServe(ctx context.Context, e env, args []string) int {
	client, cfg, code := newClient(e)
	if client == nil {
		return code
	}
	defer client.Close()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	addr := fs.String("addr", cfg.APIAddr, "listen address of the HTTP enqueue API (default API_ADDR)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitInvalid
	}
	log := logging.New(e.stderr, cfg.LogLevel, cfg.LogFormat)
	var bad *config.Error
	switch err := api.Run(ctx, cfg, *addr, client, log); {
	case errors.As(err, &bad):
		fmt.Fprintf(e.stderr, "enqueue serve: %v\n", err)
		return exitInvalid
	case errors.Is(err, api.ErrListen):
		fmt.Fprintf(e.stderr, "enqueue serve: --addr: %v\n", err)
		return exitInvalid
	case errors.Is(err, api.ErrStorage):
		fmt.Fprintf(e.stderr, "enqueue serve: %v\n", err)
		return exitUnavailable
	case err != nil:
		fmt.Fprintf(e.stderr, "enqueue serve: %v\n", err)
		return exitFailed
	}
	return exitOK
}
