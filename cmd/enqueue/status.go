package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
)

func runStatus(ctx context.Context, e env, args []string) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	jsonOut := fs.Bool("json", false, "print the status as JSON: {task_id, queue, state, result, error}")
	// Accept the flag before or after the task id.
	var positional []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return exitOK
			}
			return exitInvalid
		}
		args = fs.Args()
		if len(args) > 0 {
			positional = append(positional, args[0])
			args = args[1:]
		}
	}
	if len(positional) != 1 {
		fmt.Fprintln(e.stderr, "enqueue status: want exactly one TASK_ID")
		return exitInvalid
	}
	client, _, code := newClient(e)
	if client == nil {
		return code
	}
	defer client.Close()
	st, err := client.Status(ctx, positional[0])
	if err != nil {
		return exitFor(e, err)
	}
	if *jsonOut {
		_ = json.NewEncoder(e.stdout).Encode(st)
	} else {
		fmt.Fprintf(e.stdout, "task %s on %s: %s", st.TaskID, st.Queue, st.State)
		if st.Retried > 0 {
			fmt.Fprintf(e.stdout, " (retried %d of %d)", st.Retried, st.MaxRetry)
		}
		fmt.Fprintln(e.stdout)
		if st.Error != "" {
			fmt.Fprintf(e.stdout, "error: %s\n", st.Error)
		}
		if r := st.Result; r != nil {
			fmt.Fprintf(e.stdout, "artifact: %s\nurl: %s\npages: %d  bytes: %d  rendered: %t  render_ms: %d  waited_ms: %d\n",
				r.ArtifactKey, r.URL, r.Pages, r.Bytes, r.Rendered, r.RenderMS, r.WaitedMS)
		}
	}
	if st.State == "failed" {
		return exitFailed
	}
	return exitOK
}
