package main

import (
	"strings"
	"testing"

	"github.com/pdfexport/pdfexport/exportclient"
)

func TestParseChapters(t *testing.T) {
	for _, c := range []struct {
		name, file string
		want       []exportclient.Chapter
		err        string
	}{
		{name: "urls, titles, revisions, comments", file: "# the tutorial\nhttps://d.example/a.html Whetting Your Appetite\n\n  https://d.example/b.html rev=r7 Using the Interpreter \nhttps://d.example/c.html rev=3\nhttps://d.example/d.html\n",
			want: []exportclient.Chapter{
				{URL: "https://d.example/a.html", Title: "Whetting Your Appetite"},
				{URL: "https://d.example/b.html", Title: "Using the Interpreter", Revision: "r7"},
				{URL: "https://d.example/c.html", Revision: "3"},
				{URL: "https://d.example/d.html"},
			}},
		{name: "empty", file: "# nothing\n\n", err: "lists no chapter"},
		{name: "rev without value", file: "https://d.example/a.html rev= Title\n", err: "line 1: rev= names no revision"},
		{name: "too many", file: strings.Repeat("https://d.example/a.html\n", 1001), err: "line 1001: more than 1000 chapters"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseChapters([]byte(c.file))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("chapter %d = %+v, want %+v", i, got[i], c.want[i])
				}
			}
		})
	}
}
