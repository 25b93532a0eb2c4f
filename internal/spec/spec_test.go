package spec_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	. "github.com/pdfexport/pdfexport/internal/spec"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
)

var testAllowed = allowlist.MustParse("docs.example.com,*.example.org,127.0.0.1:8080")

func validPayload() Envelope {
	return Envelope{V: 1, ManualID: "ops-guide", Version: "2026.11.3",
		Source: EnvelopeSource{URL: "https://docs.example.com/ops-guide/2026.11.3/print"}}
}

func TestDecode_RejectsWithFieldNames(t *testing.T) {
	tests := []struct {
		name, json, field string
	}{
		{"unknown top-level field", `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"},"colour":"red"}`, "colour"},
		{"unknown nested field", `{"v":1,"manual_id":"a","version":"1","source":{"html":"x","pdf":"y"}}`, "pdf"},
		{"wrong type", `{"v":"1","manual_id":"a","version":"1","source":{"html":"x"}}`, "v"},
		{"wrong nested type", `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"},"options":{"scale":"big"}}`, "options.scale"},
		{"malformed", `{"v":1,`, "payload"},
		{"trailing data", `{"v":1} {"v":2}`, "payload"},
		{"empty", ``, "payload"},
		{"not an object", `[1,2]`, "payload"},
		{"oversize", `{"v":1,"source":{"html":"` + strings.Repeat("a", MaxPayloadBytes) + `"}}`, "payload"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeEnvelope([]byte(tt.json))
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Decode error = %v, want ErrInvalid", err)
			}
			if got := FirstField(err); got != tt.field {
				t.Fatalf("field = %q, want %q (err: %v)", got, tt.field, err)
			}
		})
	}
}

func TestDecode_RoundTrip(t *testing.T) {
	p := validPayload()
	p.Options.Landscape = true
	p.Options.Scale = new(1.5)
	b, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeEnvelope(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.ArtifactKey() != p.ArtifactKey() || !got.Options.Landscape || *got.Options.Scale != 1.5 {
		t.Fatalf("round trip changed the payload: %+v", got)
	}
}

func TestValidate_NamesFieldAndRule(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Envelope)
		field  string
		rule   string
	}{
		{"version missing", func(p *Envelope) { p.V = 0 }, "v", "from 1 to 5"},
		{"manual_id missing", func(p *Envelope) { p.ManualID = "" }, "manual_id", "required"},
		{"manual_id traversal", func(p *Envelope) { p.ManualID = "../etc" }, "manual_id", "must match"},
		{"manual_id dots", func(p *Envelope) { p.ManualID = "a..b" }, "manual_id", "'..'"},
		{"manual_id slash", func(p *Envelope) { p.ManualID = "a/b" }, "manual_id", "must match"},
		{"manual_id too long", func(p *Envelope) { p.ManualID = strings.Repeat("a", 129) }, "manual_id", "must match"},
		{"version control char", func(p *Envelope) { p.Version = "1\n2" }, "version", "must match"},
		{"no source", func(p *Envelope) { p.Source = EnvelopeSource{} }, "source", "required"},
		{"both sources", func(p *Envelope) { p.Source.HTML = "<p>x" }, "source", "not both"},
		{"html and a reference", func(p *Envelope) {
			p.Source = EnvelopeSource{HTML: "<p>x", HTMLRef: &HTMLRef{SHA256: strings.Repeat("a", 64), Bytes: 4}}
		}, "source", "not both"},
		{"reference digest", func(p *Envelope) { p.Source = EnvelopeSource{HTMLRef: &HTMLRef{SHA256: "sha256:ABC", Bytes: 4}} }, "source.html_ref.sha256", "64 lower-case hex"},
		{"reference size", func(p *Envelope) {
			p.Source = EnvelopeSource{HTMLRef: &HTMLRef{SHA256: strings.Repeat("a", 64), Bytes: MaxHTMLBytes + 1}}
		}, "source.html_ref.bytes", "between 1 and"},
		{"html too large", func(p *Envelope) { p.Source = EnvelopeSource{HTML: strings.Repeat("a", MaxHTMLBytes+1)} }, "source.html", "larger than"},
		{"file scheme", func(p *Envelope) { p.Source.URL = "file:///etc/passwd" }, "source.url", "scheme"},
		{"javascript scheme", func(p *Envelope) { p.Source.URL = "javascript:alert(1)" }, "source.url", "scheme"},
		{"host not allowed", func(p *Envelope) { p.Source.URL = "https://evil.example.net/" }, "source.url", "not allowed"},
		{"userinfo trick", func(p *Envelope) { p.Source.URL = "https://docs.example.com@evil.example.net/" }, "source.url", "credentials"},
		{"loopback", func(p *Envelope) { p.Source.URL = "http://127.0.0.1/" }, "source.url", "loopback"},
		{"loopback wrong port", func(p *Envelope) { p.Source.URL = "http://127.0.0.1:8081/" }, "source.url", "not allowed"},
		{"decimal loopback", func(p *Envelope) { p.Source.URL = "http://2130706433/" }, "source.url", "loopback"},
		{"octal loopback", func(p *Envelope) { p.Source.URL = "http://0177.0.0.1/" }, "source.url", "loopback"},
		{"hex loopback", func(p *Envelope) { p.Source.URL = "http://0x7f.0.0.1/" }, "source.url", "loopback"},
		{"mapped ipv6 loopback", func(p *Envelope) { p.Source.URL = "http://[::ffff:127.0.0.1]/" }, "source.url", "loopback"},
		{"metadata", func(p *Envelope) { p.Source.URL = "http://169.254.169.254/latest/meta-data" }, "source.url", "link-local"},
		{"private", func(p *Envelope) { p.Source.URL = "http://10.0.0.1/" }, "source.url", "not allowed"},
		{"bad paper", func(p *Envelope) { p.Options.Paper = "B5" }, "options.paper", "must be one of"},
		{"scale high", func(p *Envelope) { p.Options.Scale = new(3.0) }, "options.scale", "between 0.1 and 2"},
		{"negative margin", func(p *Envelope) { p.Options.MarginMM = &Margins{Left: new(-1.0)} }, "options.margin_mm.left", "between 0 and 100"},
		{"bad media", func(p *Envelope) { p.Options.Media = "tv" }, "options.media", "print or screen"},
		{"bad page range", func(p *Envelope) { p.Options.PageRanges = "5-2" }, "options.page_ranges", "ends before"},
		{"page zero", func(p *Envelope) { p.Options.PageRanges = "0-2" }, "options.page_ranges", "start at 1"},
		{"garbage page range", func(p *Envelope) { p.Options.PageRanges = "all" }, "options.page_ranges", "must look like"},
		{"long wait_for", func(p *Envelope) { p.Options.WaitFor = strings.Repeat("x", MaxWaitForBytes+1) }, "options.wait_for", "longer than"},
		{"request id control", func(p *Envelope) { p.RequestID = "a\x00b" }, "request_id", "printable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validPayload()
			tt.mutate(&p)
			err := p.Validate(Hosts{Sources: testAllowed})
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Validate = %v, want ErrInvalid", err)
			}
			if got := FirstField(err); got != tt.field {
				t.Fatalf("field = %q, want %q (err: %v)", got, tt.field, err)
			}
			if !strings.Contains(err.Error(), tt.rule) {
				t.Fatalf("error %q does not state the rule %q", err, tt.rule)
			}
		})
	}
}

func TestValidate_Accepts(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Envelope)
	}{
		{"url", func(p *Envelope) {}},
		{"wildcard host", func(p *Envelope) { p.Source.URL = "https://a.b.example.org/x" }},
		{"listed loopback", func(p *Envelope) { p.Source.URL = "http://127.0.0.1:8080/manual" }},
		{"html", func(p *Envelope) { p.Source = EnvelopeSource{HTML: "<!doctype html><p>hi"} }},
		{"all options", func(p *Envelope) {
			p.Options = Options{Paper: "Letter", Landscape: true, MarginMM: &Margins{Top: new(0.0)}, PrintBackground: new(false),
				Scale: new(0.5), HeaderHTML: "<span class=title></span>", Outline: true, Media: "screen", PageRanges: "1-3, 5"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validPayload()
			tt.mutate(&p)
			if err := p.Validate(Hosts{Sources: testAllowed}); err != nil {
				t.Fatalf("Validate = %v", err)
			}
		})
	}
}

func TestValidate_ReportsEveryViolation(t *testing.T) {
	p := Envelope{V: EnvelopeVersion + 1, Source: EnvelopeSource{URL: "ftp://x"}, Options: Options{Paper: "B5"}}
	err := p.Validate(Hosts{Sources: testAllowed})
	for _, field := range []string{"v:", "manual_id:", "version:", "source.url:", "options.paper:"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error %q misses %s", err, field)
		}
	}
}

func TestArtifactKey_SameInputsSameKey(t *testing.T) {
	base := validPayload()
	same := []struct {
		name   string
		mutate func(*Envelope)
	}{
		{"explicit defaults", func(p *Envelope) {
			p.Options = Options{Paper: "A4", PrintBackground: new(true), Scale: new(1.0), Media: "print",
				MarginMM: &Margins{Top: new(10.0), Right: new(10.0), Bottom: new(10.0), Left: new(10.0)}}
		}},
		{"url case and default port", func(p *Envelope) { p.Source.URL = "HTTPS://Docs.Example.com:443/ops-guide/2026.11.3/print" }},
		{"fragment", func(p *Envelope) { p.Source.URL += "#chapter-2" }},
		{"request id and force", func(p *Envelope) { p.RequestID = "r-1"; p.Force = true }},
		{"outline implies tagged", func(p *Envelope) { p.Options.Outline = true }},
	}
	want := base.ArtifactKey()
	if !strings.HasPrefix(want, "ops-guide/2026.11.3/") || len(want) != len("ops-guide/2026.11.3/")+16+4 {
		t.Fatalf("key %q does not have the form manual/version/hex16.pdf", want)
	}
	for _, tt := range same {
		t.Run(tt.name, func(t *testing.T) {
			p := validPayload()
			tt.mutate(&p)
			if tt.name == "outline implies tagged" {
				q := validPayload()
				q.Options.Outline, q.Options.Tagged = true, true
				if p.ArtifactKey() != q.ArtifactKey() {
					t.Fatalf("outline and outline+tagged differ: %s vs %s", p.ArtifactKey(), q.ArtifactKey())
				}
				return
			}
			if got := p.ArtifactKey(); got != want {
				t.Fatalf("key = %s, want %s", got, want)
			}
		})
	}
}

func TestArtifactKey_DifferentOutputDifferentKey(t *testing.T) {
	mutations := map[string]func(*Envelope){
		"paper":      func(p *Envelope) { p.Options.Paper = "Letter" },
		"landscape":  func(p *Envelope) { p.Options.Landscape = true },
		"margin":     func(p *Envelope) { p.Options.MarginMM = &Margins{Top: new(11.0)} },
		"background": func(p *Envelope) { p.Options.PrintBackground = new(false) },
		"scale":      func(p *Envelope) { p.Options.Scale = new(0.9) },
		"header":     func(p *Envelope) { p.Options.HeaderHTML = "<b>h</b>" },
		"footer":     func(p *Envelope) { p.Options.FooterHTML = "<b>f</b>" },
		"tagged":     func(p *Envelope) { p.Options.Tagged = true },
		"outline":    func(p *Envelope) { p.Options.Outline = true },
		"wait_for":   func(p *Envelope) { p.Options.WaitFor = "true" },
		"media":      func(p *Envelope) { p.Options.Media = "screen" },
		"ranges":     func(p *Envelope) { p.Options.PageRanges = "1" },
		"css size":   func(p *Envelope) { p.Options.PreferCSSPageSize = true },
		"url query":  func(p *Envelope) { p.Source.URL += "?lang=de" },
		"html":       func(p *Envelope) { p.Source = EnvelopeSource{HTML: "<p>a"} },
		"version":    func(p *Envelope) { p.Version = "2026.11.4" },
	}
	seen := map[string]string{validPayload().ArtifactKey(): "base"}
	for name, mutate := range mutations {
		p := validPayload()
		mutate(&p)
		k := p.ArtifactKey()
		if other, dup := seen[k]; dup {
			t.Errorf("%s and %s share key %s", name, other, k)
		}
		seen[k] = name
	}
}

// TestArtifactKey_SameForInlineAndReference: a document sent by reference
// names the same artifact as the same document inline.
func TestArtifactKey_SameForInlineAndReference(t *testing.T) {
	html := "<!doctype html><p>" + strings.Repeat("long ", 10000)
	sum := sha256.Sum256([]byte(html))
	inline := Envelope{V: 1, ManualID: "m", Version: "1", Source: EnvelopeSource{HTML: html}, Options: Options{Paper: "Letter"}}
	ref := inline
	ref.Source = EnvelopeSource{HTMLRef: &HTMLRef{SHA256: hex.EncodeToString(sum[:]), Bytes: len(html)}}
	if err := ref.Validate(Hosts{}); err != nil {
		t.Fatalf("a valid reference: %v", err)
	}
	if inline.ArtifactKey() != ref.ArtifactKey() {
		t.Fatalf("keys differ: %s inline, %s by reference", inline.ArtifactKey(), ref.ArtifactKey())
	}
}
