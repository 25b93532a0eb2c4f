package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/exportclient"
)

// BenchmarkLink_Stored is the handler's own cost of a signed link of a
// stored PDF (no network): where a reader's click goes besides the bytes.
func BenchmarkLink_Stored(b *testing.B) {
	secret := "whsec_" + strings.Repeat("QUJD", 11)
	e := newLinkEnv(b, linkOpts{secrets: []string{secret}})
	pdf := []byte("%PDF-1.7\n" + strings.Repeat("x", 4096) + "\n%%EOF\n")
	e.storePDF(b, e.request(b, "ops-guide", "2026.11", nil), pdf)
	link, err := exportclient.SignLink("http://x", secret, exportclient.Link{ManualID: "ops-guide", Version: "2026.11", Expires: time.Now().Add(time.Hour)})
	if err != nil {
		b.Fatal(err)
	}
	path := strings.TrimPrefix(link, "http://x")
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		e.handler.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code, rec.Body.String())
		}
	}
}
