package peer

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"

	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestPrint_BothDesignsPrintTheDocument: the baseline prints what it is
// given, in both designs, waiting for waitFor, on both Chromium builds; a
// benchmark baseline that printed an empty page would make any comparison
// meaningless.
func TestPrint_BothDesignsPrintTheDocument(t *testing.T) {
	for build, path := range testsupport.ChromiumBuilds(t) {
		t.Run(build, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			b, err := Start(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(b.Close)
			html := `<h1>PEER-TEXT</h1><script>setTimeout(() => { document.body.append("LATE-TEXT"); window.__ready = true }, 300)</script>`
			for _, d := range []string{"first tab", "second tab"} {
				var pdf bytes.Buffer
				n, err := b.Print(ctx, html, "window.__ready === true", page.PrintToPDFParams{}, &pdf)
				if err != nil {
					t.Fatalf("%v: %v", d, err)
				}
				if n != int64(pdf.Len()) || !bytes.HasPrefix(pdf.Bytes(), []byte("%PDF-")) {
					t.Fatalf("%v: %d bytes reported, %d written, not a PDF", d, n, pdf.Len())
				}
				cmd := exec.Command("pdftotext", "-", "-")
				cmd.Stdin = &pdf
				out, err := cmd.Output()
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(out), "PEER-TEXT") || !strings.Contains(string(out), "LATE-TEXT") {
					t.Errorf("%v: PDF text %q lacks the document or what waitFor waited for", d, out)
				}
			}
			if b.PID() <= 0 {
				t.Errorf("PID = %d", b.PID())
			}
		})
	}
}

// TestPrintURL_SendsTheHeaders: the URL route navigates, sends the extra
// headers with the page's requests and prints what the page shows with
// them.
func TestPrintURL_SendsTheHeaders(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer peer" {
			http.Error(w, "LOGIN-REQUIRED", http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, "<h1>PRIVATE-PEER-TEXT</h1>")
	}))
	t.Cleanup(site.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := Start(ctx, testsupport.ChromiumPath(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	var pdf bytes.Buffer
	if _, err := b.PrintURL(ctx, site.URL+"/manual", map[string]string{"Authorization": "Bearer peer"}, page.PrintToPDFParams{}, &pdf); err != nil {
		t.Fatal(err)
	}
	if text := testsupport.PDFText(t, pdf.Bytes()); !strings.Contains(text, "PRIVATE-PEER-TEXT") {
		t.Errorf("PDF text %q lacks the private page", text)
	}
}
