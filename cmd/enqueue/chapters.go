package main

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// chaptersFileLimit bounds a --chapters file: a thousand long URLs with
// titles fit many times over.
const chaptersFileLimit = 4 << 20

// parseChapters reads a --chapters file: one chapter a line, in order,
//
//	URL [rev=REVISION] [title …]
//
// Blank lines and lines starting with # are skipped. A chapter without a
// revision is printed again for every version of the manual; with one, only
// when the revision changes.
func parseChapters(b []byte) ([]exportclient.Chapter, error) {
	var chapters []exportclient.Chapter
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), spec.MaxURLBytes+spec.MaxChapterTitleBytes+spec.MaxRevisionBytes+64)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		u, rest, _ := strings.Cut(text, " ")
		c := exportclient.Chapter{URL: u}
		rest = strings.TrimSpace(rest)
		if r, ok := strings.CutPrefix(rest, "rev="); ok {
			c.Revision, rest, _ = strings.Cut(r, " ")
			if c.Revision == "" {
				return nil, fmt.Errorf("line %d: rev= names no revision", line)
			}
		}
		c.Title = strings.TrimSpace(rest)
		if len(chapters) == spec.MaxChapters {
			return nil, fmt.Errorf("line %d: more than %d chapters", line, spec.MaxChapters)
		}
		chapters = append(chapters, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("a line is too long: %w", err)
	}
	if len(chapters) == 0 {
		return nil, fmt.Errorf("lists no chapter (one \"URL [rev=REVISION] [title]\" a line)")
	}
	return chapters, nil
}
