package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"

	"github.com/pdfexport/pdfexport/exportclient"
)

// taskIDArg parses flags before or after the one TASK_ID of status and
// cancel. ok false: return code.
func taskIDArg(e env, fs *flag.FlagSet, args []string) (id string, code int, ok bool) {
	var positional []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return "", exitOK, false
			}
			return "", exitInvalid, false
		}
		args = fs.Args()
		if len(args) > 0 {
			positional = append(positional, args[0])
			args = args[1:]
		}
	}
	if len(positional) != 1 {
		fmt.Fprintf(e.stderr, "enqueue %s: want exactly one TASK_ID\n", fs.Name())
		return "", exitInvalid, false
	}
	return positional[0], 0, true
}

func runStatus(ctx context.Context, e env, args []string) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	jsonOut := fs.Bool("json", false, "print the status as JSON: {task_id, queue, state, result, error}")
	id, code, ok := taskIDArg(e, fs, args)
	if !ok {
		return code
	}
	client, _, code := newClient(e)
	if client == nil {
		return code
	}
	defer client.Close()
	st, err := client.Status(ctx, id)
	if err != nil {
		return exitFor(e, err)
	}
	printStatus(e, st, *jsonOut)
	if st.State == exportclient.StateFailed || st.State == exportclient.StateCanceled {
		return exitFailed
	}
	return exitOK
}

// runCancel cancels an export: exit 0 once it is canceled (or, when it was
// running, once its worker was told to stop and it is still stopping), 1
// when it was final already, 3 when Redis is unreachable.
func runCancel(ctx context.Context, e env, args []string) int {
	fs := flag.NewFlagSet("cancel", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	jsonOut := fs.Bool("json", false, "print the status after the cancel as JSON")
	id, code, ok := taskIDArg(e, fs, args)
	if !ok {
		return code
	}
	client, _, code := newClient(e)
	if client == nil {
		return code
	}
	defer client.Close()
	st, err := client.Cancel(ctx, id)
	if errors.Is(err, exportclient.ErrFinal) {
		fmt.Fprintf(e.stderr, "enqueue cancel: %s is %s already; nothing to cancel\n", id, st.State)
		return exitFailed
	}
	if err != nil {
		return exitFor(e, err)
	}
	printStatus(e, st, *jsonOut)
	return exitOK
}

func printStatus(e env, st exportclient.Status, jsonOut bool) {
	if jsonOut {
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
			if r.DownloadURL != "" {
				fmt.Fprintf(e.stdout, "download: %s\n", r.DownloadURL)
			}
			printWarnings(e, r)
		}
	}
}

// printWarnings lists what the render could not load or saw fail.
func printWarnings(e env, r *exportclient.Result) {
	if len(r.Warnings) == 0 {
		return
	}
	fmt.Fprintf(e.stdout, "warnings (%d):\n", len(r.Warnings)+r.WarningsOmitted)
	for _, w := range r.Warnings {
		fmt.Fprintf(e.stdout, "  %s\n", w)
	}
	if r.WarningsOmitted > 0 {
		fmt.Fprintf(e.stdout, "  … and %d more\n", r.WarningsOmitted)
	}
}
