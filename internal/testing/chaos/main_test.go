package chaos

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

var recorder *Recorder

// TestMain writes the run's summary to $PDFEXPORT_CHAOS_SUMMARY (make chaos
// renders it into RELIABILITY.md).
func TestMain(m *testing.M) {
	mode := "quick"
	if full() {
		mode = "full"
	}
	recorder = NewRecorder(mode)
	code := m.Run()
	if path := os.Getenv("PDFEXPORT_CHAOS_SUMMARY"); path != "" {
		cmd := "PDFEXPORT_CHAOS=" + os.Getenv("PDFEXPORT_CHAOS") + " go test " + strings.Join(os.Args[1:], " ") + " ./internal/testing/chaos/"
		if err := recorder.Write(path, cmd); err != nil {
			fmt.Fprintln(os.Stderr, "writing the chaos summary:", err)
			code = 1
		}
	}
	os.Exit(code)
}
