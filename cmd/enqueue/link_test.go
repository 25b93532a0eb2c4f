package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// TestLink_PrintsASignedURL: enqueue link prints the URL under
// API_PUBLIC_URL (its path prefix kept), signed over the API path with
// LINK_SECRET's first key, expiring after --expires; bad input exits 2
// naming what is wrong.
func TestLink_PrintsASignedURL(t *testing.T) {
	key := bytes.Repeat([]byte{9}, 32)
	secret := "whsec_" + base64.StdEncoding.EncodeToString(key)
	other := "whsec_" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{8}, 32))
	manualsFile := filepath.Join(t.TempDir(), "manuals.yaml")
	if err := os.WriteFile(manualsFile, []byte("manuals:\n  ops-guide: {url: \"https://docs.example.com/{version}\", allow_query: [paper]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"API_PUBLIC_URL=https://pdf.example.com/api/", "ALLOWED_HOSTS=docs.example.com"}
	environ := append(base, "LINK_SECRET="+secret+" "+other, "MANUALS_FILE="+manualsFile)

	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"link", "--manual", "ops-guide", "--version", "2026.11", "--paper", "Letter", "--expires", "2h"}, environ, nil, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	u, err := url.Parse(strings.TrimSpace(stdout.String()))
	if err != nil {
		t.Fatal(err)
	}
	if u.Host != "pdf.example.com" || u.Path != "/api/v1/manuals/ops-guide/2026.11.pdf" || u.Query().Get("paper") != "Letter" {
		t.Errorf("link %s", u)
	}
	if err := spec.VerifyLink([][]byte{key}, "GET", "/v1/manuals/ops-guide/2026.11.pdf", u.Query(), time.Now()); err != nil {
		t.Errorf("the link does not verify with the first key: %v", err)
	}
	if err := spec.VerifyLink([][]byte{key}, "GET", "/v1/manuals/ops-guide/2026.11.pdf", u.Query(), time.Now().Add(2*time.Hour+time.Minute)); err == nil {
		t.Error("the link still verifies after --expires")
	}

	for _, tc := range []struct {
		name    string
		args    []string
		environ []string
		want    string
	}{
		{"no secret", []string{"link", "--manual", "ops-guide", "--version", "1"}, base, "LINK_SECRET"},
		{"no public URL", []string{"link", "--manual", "ops-guide", "--version", "1"}, []string{"LINK_SECRET=" + secret}, "API_PUBLIC_URL"},
		{"bad secret", []string{"link", "--manual", "ops-guide", "--version", "1"}, append(base, "LINK_SECRET=whsec_c2hvcnQ="), "LINK_SECRET"},
		{"no manual flag", []string{"link", "--version", "1"}, environ, "--manual"},
		{"unknown manual", []string{"link", "--manual", "nope", "--version", "1"}, environ, `no manual "nope"`},
		{"query not allowed", []string{"link", "--manual", "ops-guide", "--version", "1", "--landscape"}, environ, "landscape"},
		{"bad version", []string{"link", "--manual", "ops-guide", "--version", "-x"}, environ, "version"},
		{"bad expiry", []string{"link", "--manual", "ops-guide", "--version", "1", "--expires", "-1h"}, environ, "--expires"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, tc.environ, nil, &stdout, &stderr)
			if code != exitInvalid || !strings.Contains(stderr.String(), tc.want) || stdout.Len() > 0 {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d naming %q", code, stdout.String(), stderr.String(), exitInvalid, tc.want)
			}
			if strings.Contains(stderr.String(), strings.TrimPrefix(secret, "whsec_")) {
				t.Error("stderr shows the secret")
			}
		})
	}
}
