package chaos

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestParseFuzzLog_ReadsLastProgressAndVerdict(t *testing.T) {
	log := "fuzz: elapsed: 0s, gathering baseline coverage: 0/77 completed\n" +
		"fuzz: elapsed: 57s, execs: 2900000 (50000/sec), new interesting: 10 (total: 87)\n" +
		"fuzz: elapsed: 1m0s, execs: 3021883 (50364/sec), new interesting: 12 (total: 89)\nPASS\nok  \tgithub.com/x/spec\t60.1s\n"
	f := ParseFuzzLog("FuzzDecode", log)
	if !f.Passed || f.Elapsed != "1m0s" || f.Execs != "3021883 (50364/sec)" || f.Interesting != "12 (total: 89)" {
		t.Fatalf("parsed %+v", f)
	}
	f = ParseFuzzLog("FuzzDecode", "--- FAIL: FuzzDecode (0.1s)\n    Failing input written to testdata/fuzz/FuzzDecode/abc\nFAIL\n")
	if f.Passed || !strings.Contains(f.Failure, "testdata/fuzz/FuzzDecode/abc") {
		t.Fatalf("parsed %+v", f)
	}
}

func TestMarkdown_CountsLostDuplicatesAndRejections(t *testing.T) {
	s := Summary{Mode: "full", Started: time.Now(), Finished: time.Now(),
		Scenarios: []Scenario{{Name: "a", Passed: true, Exports: 3, Duplicates: 1}, {Name: "b", Passed: false, Lost: 2, LeakedProcesses: 1}},
		Hostile:   []Hostile{{Name: "x", Interface: "cli", Passed: true}, {Name: "y|z", Interface: "http", Passed: false, Got: "200"}}}
	var b bytes.Buffer
	Markdown(&b, s, []Fuzz{{Target: "FuzzDecode", Passed: true}}, "make chaos", time.Minute)
	for _, want := range []string{"| scenarios passed | 1 of 2 |", "| exports lost | 2 |", "| duplicate renders (all) | 1 |",
		"| leaked Chromium processes | 1 |", "| hostile inputs rejected or contained as expected | 1 of 2 |", `y\|z`, "make chaos"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report misses %q:\n%s", want, b.String())
		}
	}
}
