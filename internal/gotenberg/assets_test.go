package gotenberg

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/spec"
)

func TestInlineAssets(t *testing.T) {
	files := []upload{
		{"logo.png", []byte("\x89PNG\r\n\x1a\nfake")},
		{"style.css", []byte(`@import 'more.css'; body{background:url("logo.png")}`)},
		{"more.css", []byte(`h1{color:red}`)},
		{"loop.css", []byte(`@import "loop.css";`)},
		{"font.woff2", []byte("wOF2")},
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for _, tc := range []struct {
		name, doc string
		want      []string
		not       []string
	}{
		{"img src", `<img src="logo.png">`, []string{`src="data:image/png;base64,` + b64("\x89PNG\r\n\x1a\nfake") + `"`}, nil},
		{"dot slash and query", `<img src="./logo.png?v=1">`, []string{"data:image/png;base64,"}, nil},
		{"stylesheet and its imports", `<link rel="stylesheet" href="style.css">`, []string{`href="data:text/css;base64,`}, []string{"style.css"}},
		{"style element", `<style>@font-face{src:url(font.woff2)}</style>`, []string{`url("data:font/woff2;base64,`}, nil},
		{"style attribute", `<div style="background:url('logo.png')"></div>`, []string{"data:image/png;base64,"}, nil},
		{"srcset", `<img srcset="logo.png 1x, logo.png 2x">`, []string{"2x"}, []string{`"logo.png`}},
		{"remote kept, a file not sent is missing", `<img src="https://cdn.example.com/a.png"><img src="nope.png"><a href="#top">x</a><a href="b.html">b</a>`,
			[]string{"https://cdn.example.com/a.png", `"` + spec.MissingFilePrefix + `nope.png"`, `"#top"`, `"b.html"`}, nil},
		{"no directories", `<img src="/etc/passwd"><img src="../logo.png">`, []string{`"/etc/passwd"`, `"` + spec.MissingFilePrefix + `../logo.png"`}, nil},
		{"an import cycle ends", `<link rel="stylesheet" href="loop.css">`, []string{"data:text/css;base64,"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := inlineAssets([]byte(tc.doc), files)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("lacks %q:\n%s", w, got)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("still holds %q:\n%s", n, got)
				}
			}
		})
	}
	// The imported stylesheet itself is inlined inside the first one.
	got, _ := inlineAssets([]byte(`<link rel="stylesheet" href="style.css">`), files)
	i := strings.Index(got, "base64,") + len("base64,")
	css, _ := base64.StdEncoding.DecodeString(got[i : strings.Index(got[i:], `"`)+i])
	if !strings.Contains(string(css), "data:text/css;base64,"+b64("h1{color:red}")) || !strings.Contains(string(css), "data:image/png") {
		t.Errorf("style.css inlined as %s", css)
	}
}

func TestInlineAssetsLimit(t *testing.T) {
	big := upload{"big.bin", make([]byte, spec.MaxHTMLBytes*3/4+10)}
	_, err := inlineAssets([]byte(`<img src="big.bin">`), []upload{big})
	if he, ok := err.(*httpError); !ok || he.status != 413 || !strings.Contains(he.msg, "2 MiB") {
		t.Errorf("one asset past the limit: %v", err)
	}
	half := upload{"half.bin", make([]byte, spec.MaxHTMLBytes/2)}
	_, err = inlineAssets([]byte(`<img src="half.bin"><img src="half.bin">`), []upload{half})
	if he, ok := err.(*httpError); !ok || he.status != 413 {
		t.Errorf("two references past the limit together: %v", err)
	}
}

func TestExpandMarkdown(t *testing.T) {
	f := &form{files: []upload{{"a.md", []byte("# Title\n\n*em* {{ not an action }}")}, {"x.txt", []byte("t")}}}
	out, err := expandMarkdown([]byte(`<body>{{ toHTML "a.md" }}</body>`), f)
	if err != nil || !strings.Contains(string(out), "<h1>Title</h1>") || !strings.Contains(string(out), "<em>em</em>") {
		t.Errorf("%s %v", out, err)
	}
	for doc, want := range map[string]string{
		`{{ toHTML "missing.md" }}`:              "missing.md",
		`{{ toHTML "x.txt" }}`:                   "x.txt",
		`{{ range 1000000 }}{{ toHTML "a.md" }}`: "other than",
		`<p>no action</p>`:                       "no {{ toHTML",
	} {
		if _, err := expandMarkdown([]byte(doc), f); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
}

// TestInlineAssetsImportFanOut: stylesheets importing each other many
// times over (a few bytes each, millions of copies once inlined) stop
// with 413 after bounded work, not after filling the memory.
func TestInlineAssetsImportFanOut(t *testing.T) {
	imports := func(name string) []byte {
		return []byte(strings.Repeat(`@import "`+name+`";`, 200))
	}
	files := []upload{{"a.css", imports("b.css")}, {"b.css", imports("c.css")}, {"c.css", imports("d.css")}, {"d.css", []byte("p{color:red}")}}
	start := time.Now()
	_, err := inlineAssets([]byte(`<link rel="stylesheet" href="a.css">`), files)
	if he, ok := err.(*httpError); !ok || he.status != 413 {
		t.Errorf("%v, want 413", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s", took)
	}
}
