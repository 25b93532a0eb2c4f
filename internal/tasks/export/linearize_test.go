package export

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLinearize_Failures: a PDF qpdf cannot read fails with ErrPostProcess
// naming fast_web_view and qpdf's own message (final); a canceled attempt
// reports the cancel, not the document.
func TestLinearize_Failures(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.pdf"), filepath.Join(dir, "out.pdf")
	if err := os.WriteFile(in, []byte("%PDF-1.7\nnot a PDF at all\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := linearize(context.Background(), in, out, "")
	if !errors.Is(err, ErrPostProcess) || !contains(err.Error(), "fast_web_view", "qpdf") {
		t.Fatalf("linearize(garbage) = %v; want ErrPostProcess naming fast_web_view and qpdf", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := linearize(ctx, "testdata/none.pdf", out, ""); !errors.Is(err, context.Canceled) {
		t.Fatalf("linearize(canceled) = %v; want context.Canceled", err)
	}
	if err := checkLinearized(in); !errors.Is(err, ErrPostProcess) {
		t.Fatalf("checkLinearized(not linearized) = %v; want ErrPostProcess", err)
	}
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
