package spec_test

import (
	"errors"
	"math"
	"net/url"
	"regexp"
	"strings"
	"testing"

	. "github.com/pdfexport/pdfexport/internal/spec"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
)

// The fuzz targets check the promises of the wire contract on arbitrary
// input. `go test ./internal/spec` runs them over the committed seed corpus
// (testdata/fuzz/<FuzzName>/); `make chaos` fuzzes each for 60 s:
//
//	go test -run '^$' -fuzz '^FuzzDecode$' -fuzztime 60s ./internal/spec

// keyRE is the shape every artifact key has: two identifiers and the hash.
var keyRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*/[0-9a-f]{16}\.(pdf|png|jpeg|webp)$`)

// checkKey asserts the properties of a validated payload's key: its shape,
// no "..", and that encoding and decoding the payload (what travels through
// Redis between the enqueuer and the worker) names the same artifact.
func checkKey(t *testing.T, p Envelope) {
	t.Helper()
	key := p.ArtifactKey()
	if !keyRE.MatchString(key) || strings.Contains(key, "..") {
		t.Fatalf("key %q of a valid payload does not match %s (or contains '..')", key, keyRE)
	}
	if again := p.ArtifactKey(); again != key {
		t.Fatalf("ArtifactKey is not deterministic: %q then %q", key, again)
	}
	b, err := p.Encode()
	if err != nil {
		t.Fatalf("a valid payload does not encode: %v (%+v)", err, p)
	}
	q, err := DecodeEnvelope(b)
	if err != nil {
		t.Fatalf("the encoding of a valid payload does not decode: %v\n%s", err, b)
	}
	if err := q.Validate(Hosts{Sources: testAllowed}); err != nil {
		t.Fatalf("a valid payload is invalid after encoding and decoding: %v\n%s", err, b)
	}
	if got := q.ArtifactKey(); got != key {
		t.Fatalf("key changed through Encode/Decode: %q, then %q\n%s", key, got, b)
	}
}

// FuzzDecode: Decode never panics on any byte string, everything it rejects
// matches ErrInvalid and names a field, and a payload that decodes and
// validates keeps its artifact key through a re-encoding.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"v":1,"manual_id":"ops-guide","version":"2026.11.3","source":{"url":"https://docs.example.com/ops-guide/2026.11.3/print"}}`,
		`{"v":1,"manual_id":"a","version":"1","source":{"html":"<p>x"},"options":{"paper":"Letter","landscape":true,"margin_mm":{"top":0,"left":12.5},"print_background":false,"scale":0.5,"header_html":"<span class=title></span>","outline":true,"wait_for":"window.__PDF_READY__===true","media":"screen","page_ranges":"1-3, 5","prefer_css_page_size":true},"force":true,"request_id":"r-1"}`,
		`{"v":1,"manual_id":"a","version":"1","source":{"html":"\u00e9\ud800"}}`,
		`{"v":1,"manual_id":"a","version":"1","source":{"html":"<p>x"},"options":{"outline":true,"metadata":{"title":"T","keywords":["a","b"],"language":"en-GB"},"watermark":{"text":"DRAFT","opacity":0.3,"angle":-30,"font_size_pt":12.5},"encryption":{"allow":["print","copy"]}},"encryption_ref":{"id":"t-1","identity":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}}`,
		`{"v":1,"manual_id":"../etc","version":"1","source":{"url":"http://0x7f.1/"}}`,
		`{"v":1,"manual_id":"a","version":"1","source":{"url":"http://[::ffff:169.254.169.254]/"}}`,
		`{"v":1} {"v":2}`, `[1,2]`, `{"v":1,`, ``, `null`, `{"v":1e400}`, `{"options":{"scale":"big"}}`,
		`{"v":1,"manual_id":"a","version":"1","source":{"url":"https://docs.example.com@evil.example.net/"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := DecodeEnvelope(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) || FirstField(err) == "" {
				t.Fatalf("Decode error %v does not match ErrInvalid with a field", err)
			}
			return
		}
		if err := p.Validate(Hosts{Sources: testAllowed}); err != nil {
			if !errors.Is(err, ErrInvalid) || FirstField(err) == "" {
				t.Fatalf("Validate error %v does not match ErrInvalid with a field", err)
			}
			return
		}
		checkKey(t, p)
		if p.Source.URL != "" {
			checkAllowedURL(t, p.Source.URL)
		}
	})
}

// fuzzAllowed lists one special address exactly; nothing else special may pass.
var fuzzAllowed = testAllowed

// checkAllowedURL asserts what an accepted source URL must be: http(s), no
// user credentials, and a host that is either a name on the list or an
// address that is public or listed exactly with this port.
func checkAllowedURL(t *testing.T, raw string) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("accepted URL %q does not parse: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		t.Fatalf("accepted URL %q has scheme %q", raw, u.Scheme)
	}
	if u.User != nil || strings.Contains(u.Host, "@") {
		t.Fatalf("accepted URL %q carries user info", raw)
	}
	port := u.Port()
	if port == "" {
		port = DefaultPort(u.Scheme)
	}
	canon, addr, isIP := allowlist.CanonicalHost(u.Hostname())
	if isIP && allowlist.IsSpecial(addr) && !(canon == "127.0.0.1" && port == "8080") {
		t.Fatalf("accepted URL %q reaches the special address %s:%s, which is not listed", raw, addr, port)
	}
	if !isIP && !fuzzAllowed.AllowsHost(canon, port) {
		t.Fatalf("accepted URL %q names host %q, which is not on the list", raw, canon)
	}
}

// FuzzValidateURL: ValidateURL never panics and never accepts a URL whose
// host is a loopback, private, link-local, metadata or otherwise special
// address (in any notation: decimal, octal, hex, short, IPv4-mapped IPv6)
// unless the list names that address and port exactly.
func FuzzValidateURL(f *testing.F) {
	for _, s := range []string{
		"https://docs.example.com/ops-guide/print", "https://a.b.example.org/x", "http://127.0.0.1:8080/m",
		"http://127.0.0.1/", "http://127.0.0.1:8081/", "http://2130706433:8080/", "http://0177.0.0.1:8080/",
		"http://0x7f.0.0.1:8080/", "http://127.1:8080/", "http://[::ffff:127.0.0.1]:8080/", "http://[::1]:8080/",
		"http://169.254.169.254/latest/meta-data", "http://[fd00:ec2::254]/", "http://10.0.0.1/", "http://192.168.1.1/",
		"http://0/", "http://0.0.0.0:8080/", "http://docs.example.com@evil.example.net/", "http://localhost:8080/",
		"file:///etc/passwd", "javascript:alert(1)", "http://docs.example.com.evil.net/", "http://[::ffff:7f00:1]:8080/",
		"http://127.0.0.1.:8080/", "http://DOCS.EXAMPLE.COM:443/", "https://docs.example.com:0/", "http:\\\\docs.example.com",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if err := ValidateURL(raw, fuzzAllowed); err != nil {
			if err.Field != "source.url" || !errors.Is(err, ErrInvalid) {
				t.Fatalf("ValidateURL(%q) error %v: want field source.url matching ErrInvalid", raw, err)
			}
			return
		}
		checkAllowedURL(t, raw)
		p := validPayload()
		p.Source.URL = raw
		if err := p.Validate(Hosts{Sources: fuzzAllowed}); err != nil {
			t.Fatalf("ValidateURL accepted %q but Validate refused it: %v", raw, err)
		}
		checkKey(t, p)
	})
}

// FuzzArtifactKey builds payloads the way Go clients do (exportclient fills
// the struct; no JSON decoder normalizes it first): Validate and ArtifactKey
// never panic, and a payload Validate accepts has a well-formed key that
// survives the trip through Redis (Encode, Decode) unchanged.
func FuzzArtifactKey(f *testing.F) {
	f.Add("ops-guide", "2026.11.3", "https://docs.example.com/ops-guide/2026.11.3/print", "", "", "", "A4", 1.0, 10.0, false, false)
	f.Add("a", "1", "", "<!doctype html><p>caf\xe9", "<b>h</b>", "window.__PDF_READY__===true", "Letter", 0.5, 0.0, true, true)
	f.Add("a.b_c-d", "1", "", "<p>x", "", "", "", math.NaN(), 5.0, false, false)
	f.Add("a", "v1..2", "", "<p>x", "", "", "", 1.0, 5.0, false, false)
	f.Add("x", "1", "", "<p>x", "", "", "A3", 1.5, math.Inf(1), false, true)
	f.Add("..", ".", "http://127.0.0.1:8080/", "", "", "", "A5", 2.0, 100.0, true, false)
	f.Fuzz(func(t *testing.T, manual, version, rawURL, html, header, waitFor, paper string, scale, margin float64, landscape, outline bool) {
		p := Envelope{V: PayloadVersion, ManualID: manual, Version: version, Source: EnvelopeSource{URL: rawURL, HTML: html},
			Options: Options{Paper: paper, Landscape: landscape, Outline: outline, HeaderHTML: header, WaitFor: waitFor,
				Scale: &scale, MarginMM: &Margins{Top: &margin, Left: &margin}}}
		err := p.Validate(Hosts{Sources: fuzzAllowed})
		if err != nil {
			if !errors.Is(err, ErrInvalid) || FirstField(err) == "" {
				t.Fatalf("Validate error %v does not match ErrInvalid with a field", err)
			}
			return
		}
		checkKey(t, p)
		if k := p.ArtifactKey(); !strings.HasPrefix(k, manual+"/"+version+"/") {
			t.Fatalf("key %q does not start with manual_id/version/", k)
		}
	})
}
