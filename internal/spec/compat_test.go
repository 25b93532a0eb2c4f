package spec

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// typePaths lists the JSON paths of every field of t, recursively, array
// elements as "[]" (what jsonPaths gives for a document using them all).
func typePaths(t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		if t.Kind() == reflect.Slice {
			if t.Elem().Kind() == reflect.Uint8 {
				return nil // []byte: a string in JSON
			}
			prefix += "[]"
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			out = append(out, typePaths(f.Type, prefix)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		p := name
		if prefix != "" {
			p = prefix + "." + name
		}
		out = append(out, p)
		out = append(out, typePaths(f.Type, p)...)
	}
	return out
}

// TestEnvelopeFieldsHaveAVersion: every field a worker decodes from a queue
// (envelopes and chapter tasks) is one of envelope version 1 or is listed
// in addedIn with the version that introduced it. Without this, a new field
// would be written into envelopes of version 1, and a worker of an earlier
// release would refuse it only by strict decoding, after the enqueuer
// stored the export's secrets, instead of the enqueuer's gate keeping it
// off that worker.
func TestEnvelopeFieldsHaveAVersion(t *testing.T) {
	for _, tc := range []struct {
		name   string
		typ    reflect.Type
		golden string
	}{
		{"Envelope", reflect.TypeFor[Envelope](), envelopeV1Fields},
		{"ChapterTask", reflect.TypeFor[ChapterTask](), chapterTaskV1Fields},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v1 := strings.Fields(tc.golden)
			for _, p := range typePaths(tc.typ, "") {
				if !slices.Contains(v1, p) && addedIn[p] == 0 {
					t.Errorf("%s field %q is not a field of envelope version 1: add it to spec.addedIn with the version that introduces it (and raise EnvelopeVersion to it)", tc.name, p)
				}
			}
			if v := slices.Max(append(slices.Collect(mapValues(addedIn)), MinEnvelopeVersion)); v > EnvelopeVersion {
				t.Errorf("addedIn names envelope version %d, newer than EnvelopeVersion %d", v, EnvelopeVersion)
			}
		})
	}
}

func mapValues(m map[string]int) func(func(int) bool) {
	return func(yield func(int) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

// envelopeV1Fields and chapterTaskV1Fields are the JSON paths of envelope
// version 1 (commit 6484386's worker decodes exactly these). Never edit
// them: a new field goes into addedIn.
const envelopeV1Fields = `
v manual_id version source source.url source.html source.html_ref
source.html_ref.sha256 source.html_ref.bytes source.credentials_ref
source.credentials_ref.id source.credentials_ref.identity
source.credentials_ref.header_names source.credentials_ref.cookie_names
source.chapters source.chapters[].url source.chapters[].html
source.chapters[].title source.chapters[].revision options options.paper
options.landscape options.margin_mm options.margin_mm.top
options.margin_mm.right options.margin_mm.bottom options.margin_mm.left
options.print_background options.scale options.header_html
options.footer_html options.outline options.tagged options.wait_for
options.media options.page_ranges options.prefer_css_page_size
options.fail_on_resource_errors options.fail_on_console_errors
options.metadata options.metadata.title options.metadata.author
options.metadata.subject options.metadata.keywords
options.metadata.creator options.metadata.language options.watermark
options.watermark.text options.watermark.opacity options.watermark.angle
options.watermark.font_size_pt options.encryption
options.encryption.user_password options.encryption.owner_password
options.encryption.allow options.toc force request_id callback
callback.url traceparent tracestate encryption_ref encryption_ref.id
encryption_ref.identity client`

const chapterTaskV1Fields = `
v manual_task index manual_id version chapter chapter.url chapter.html
chapter.title chapter.revision options options.paper options.landscape
options.margin_mm options.margin_mm.top options.margin_mm.right
options.margin_mm.bottom options.margin_mm.left options.print_background
options.scale options.header_html options.footer_html options.outline
options.tagged options.wait_for options.media options.page_ranges
options.prefer_css_page_size options.fail_on_resource_errors
options.fail_on_console_errors options.metadata options.metadata.title
options.metadata.author options.metadata.subject
options.metadata.keywords options.metadata.creator
options.metadata.language options.watermark options.watermark.text
options.watermark.opacity options.watermark.angle
options.watermark.font_size_pt options.encryption
options.encryption.user_password options.encryption.owner_password
options.encryption.allow options.toc force`

// TestDecodeEnvelope_Versions: a worker serves envelope versions 1 to
// EnvelopeVersion and refuses a newer one for good (ErrNewerEnvelope, which
// matches ErrInvalid), naming the version it needs and the first field it
// does not know; requests stay version 1.
func TestDecodeEnvelope_Versions(t *testing.T) {
	const body = `"manual_id":"m","version":"1","source":{"html":"<p>x</p>"}`
	for _, tc := range []struct {
		name      string
		payload   string
		field     string // "" when accepted
		newer     bool
		ruleParts []string
	}{
		{"version 1", `{"v":1,` + body + `}`, "", false, nil},
		{"version 2", `{"v":2,` + body + `}`, "", false, nil},
		{"version 3", `{"v":3,` + body + `}`, "", false, nil},
		{"version 4", `{"v":4,` + body + `}`, "", false, nil},
		{"version 6 with a field this worker does not know", `{"v":6,` + body + `,"options":{"paper":"A4","hyphenate":true}}`,
			"hyphenate", true, []string{"unknown field", "envelope version 6", "serves versions 1 to 5"}},
		{"version 6, known fields only", `{"v":6,` + body + `}`, "v", true, []string{"envelope version 6", "upgrade the workers"}},
		{"version 0", `{"v":0,` + body + `}`, "v", false, []string{"from 1 to 5, got 0"}},
		{"unknown field of version 1", `{"v":1,` + body + `,"hyphenate":true}`, "hyphenate", false, []string{"unknown field"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := DecodeEnvelope([]byte(tc.payload))
			if err == nil {
				err = e.Validate(Hosts{})
			}
			if tc.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || FirstField(err) != tc.field || !errors.Is(err, ErrInvalid) || errors.Is(err, ErrNewerEnvelope) != tc.newer {
				t.Fatalf("err = %v (field %q, newer %v), want field %q, newer %v", err, FirstField(err), errors.Is(err, ErrNewerEnvelope), tc.field, tc.newer)
			}
			for _, part := range tc.ruleParts {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q does not say %q", err, part)
				}
			}
		})
	}
	if _, err := DecodeChapterTask([]byte(`{"v":6,"manual_task":"t","index":0,"manual_id":"m","version":"1","chapter":{"html":"x","title":"T","page_style":1}}`)); !errors.Is(err, ErrNewerEnvelope) || FirstField(err) != "page_style" {
		t.Errorf("chapter task of version 6: %v, want ErrNewerEnvelope naming page_style", err)
	}
	r := Request{V: 2, ManualID: "m", Version: "1", Source: RequestSource{HTML: "<p>x</p>"}}
	if err := r.Validate(Hosts{}); FirstField(err) != "v" {
		t.Errorf("a request of version 2: %v, want refused naming v (requests stay version 1)", err)
	}
}
