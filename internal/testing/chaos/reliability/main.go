// Command reliability renders RELIABILITY.md from the chaos tests' JSON
// summary and the `go test -fuzz` logs that `make chaos` collects.
//
//	go run ./internal/testing/chaos/reliability -summary var/chaos/summary.json \
//	    -fuzz-dir var/chaos -command 'make chaos' -wall 900 -out RELIABILITY.md
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pdfexport/pdfexport/internal/testing/chaos"
)

func main() {
	summary := flag.String("summary", "var/chaos/summary.json", "JSON summary written by the chaos tests")
	fuzzDir := flag.String("fuzz-dir", "var/chaos", "directory holding fuzz-<Target>.log files")
	command := flag.String("command", "make chaos", "the command that produced the figures")
	wall := flag.Int("wall", 0, "wall time of the whole run in seconds")
	out := flag.String("out", "RELIABILITY.md", "markdown file to write")
	flag.Parse()

	s, err := chaos.ReadSummary(*summary)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reliability:", err)
		os.Exit(1)
	}
	logs, _ := filepath.Glob(filepath.Join(*fuzzDir, "fuzz-*.log"))
	sort.Strings(logs)
	var fuzz []chaos.Fuzz
	for _, path := range logs {
		b, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "reliability:", err)
			os.Exit(1)
		}
		target := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "fuzz-"), ".log")
		fuzz = append(fuzz, chaos.ParseFuzzLog(target, string(b)))
	}
	var buf bytes.Buffer
	chaos.Markdown(&buf, s, fuzz, *command, time.Duration(*wall)*time.Second)
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "reliability:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s\n", *out)
}
