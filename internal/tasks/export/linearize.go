package export

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// MaxLinearizeBytes bounds the PDF options.fast_web_view linearizes when no
// other document option asks pdfcpu to rewrite it. qpdf runs in a process
// of its own, so the worker's heap does not pay for it, but qpdf holds the
// whole document, many times the PDF's size in memory (docs/CAPACITY.md,
// "Fast web view"). One linearization at a time per worker (the
// Workspace's slot), so this bound is what caps a worker's extra memory
// for it.
const MaxLinearizeBytes = 256 << 20

// qpdfWaitDelay is how long a canceled qpdf gets to exit after SIGKILL
// before its pipes are closed under it.
const qpdfWaitDelay = 5 * time.Second

// findQPDF looks qpdf up once per process: `make setup` and the image
// install it.
var findQPDF = sync.OnceValues(func() (string, error) { return exec.LookPath("qpdf") })

// linearize writes the linearized (fast web view) copy of the PDF at in to
// out with qpdf. ownerPassword is the encryption's owner password when the
// PDF is encrypted: qpdf reads it from its stdin (never its command line,
// which every local user can read) and keeps the encryption as it is.
// qpdf gets no environment: the worker's holds secrets it has no use for.
func linearize(ctx context.Context, in, out, ownerPassword string) error {
	bin, err := findQPDF()
	if err != nil {
		return fmt.Errorf("%w: options.fast_web_view needs qpdf on the worker (make setup and the image install it): %w", ErrPostProcess, err)
	}
	args := []string{"--linearize"}
	if ownerPassword != "" {
		args = append(args, "--password-file=-")
	}
	cmd := exec.CommandContext(ctx, bin, append(args, in, out)...)
	cmd.Env = []string{}
	cmd.WaitDelay = qpdfWaitDelay
	if ownerPassword != "" {
		// The first line of the file is the password; a validated password
		// is printable ASCII, so it has no line break of its own.
		cmd.Stdin = strings.NewReader(ownerPassword + "\n")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &limitedBuffer{b: &stderr, n: 2048}
	err = cmd.Run()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var exit *exec.ExitError
	// 3: warnings only, the output is written (qpdf's exit codes).
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("%w: linearizing (fast_web_view) with qpdf: %w: %s", ErrPostProcess, err, strings.TrimSpace(stderr.String()))
	}
	return checkLinearized(out)
}

// checkLinearized confirms that out starts with a linearization parameter
// dictionary, which a linearized file has as its first object.
func checkLinearized(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, 1024)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return err
	}
	if !bytes.HasPrefix(head[:n], []byte("%PDF-")) || !bytes.Contains(head[:n], []byte("/Linearized")) {
		return fmt.Errorf("%w: qpdf's output is not a linearized PDF", ErrPostProcess)
	}
	return nil
}

// limitedBuffer keeps the first n bytes written to it and discards the
// rest, so a chatty child cannot grow the worker's heap.
type limitedBuffer struct {
	b *bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
