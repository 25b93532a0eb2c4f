package chaos

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// Summary is what one run of the chaos tests measured. The tests write it as
// JSON to $PDFEXPORT_CHAOS_SUMMARY; cmd reliability renders it (with the
// fuzzing logs) into RELIABILITY.md.
type Summary struct {
	Mode      string     `json:"mode"` // quick | full
	GoTest    string     `json:"go_test"`
	Started   time.Time  `json:"started"`
	Finished  time.Time  `json:"finished"`
	Scenarios []Scenario `json:"scenarios"`
	Hostile   []Hostile  `json:"hostile"`
}

// Scenario is the outcome of one fault scenario.
type Scenario struct {
	Name    string  `json:"name"`
	Fault   string  `json:"fault"`
	Passed  bool    `json:"passed"`
	Seconds float64 `json:"seconds"`
	Exports int     `json:"exports"`
	// Lost: exports of valid requests that did not complete (archived, or
	// not done by the scenario's deadline).
	Lost int `json:"lost"`
	// Renders counts rendered:true results; Duplicates the renders beyond
	// one per key, and DuplicatesOutsideFailOpen those of keys none of whose
	// exports failed open (must be 0).
	Renders                   int `json:"renders"`
	Keys                      int `json:"keys"`
	Duplicates                int `json:"duplicates"`
	DuplicatesOutsideFailOpen int `json:"duplicates_outside_fail_open"`
	FailOpen                  int `json:"fail_open"`
	CorruptArtifacts          int `json:"corrupt_artifacts"`
	LeakedProcesses           int `json:"leaked_processes"`
	LeakedTempFiles           int `json:"leaked_temp_files"`
	Faults                    int `json:"faults"`
	// SideKeys counts the keys stored beside tasks (credentials, large
	// documents) the scenario saw; SideKeysOutlived those that stayed more
	// than a few seconds after their last owner's final state,
	// SideKeysLeft those still there at the end, SideKeyLingerMS the
	// longest a key stayed after its owners were final (to within a second,
	// the watch's period).
	SideKeys         int    `json:"side_keys,omitempty"`
	SideKeysOutlived int    `json:"side_keys_outlived,omitempty"`
	SideKeysLeft     int    `json:"side_keys_left,omitempty"`
	SideKeyLingerMS  int64  `json:"side_key_linger_ms,omitempty"`
	Notes            string `json:"notes,omitempty"`
}

// Hostile is one hostile-input case.
type Hostile struct {
	Name      string `json:"name"`
	Interface string `json:"interface"` // cli | http | task | render
	Want      string `json:"want"`      // the expected field or error
	Passed    bool   `json:"passed"`
	Got       string `json:"got,omitempty"`
}

// Recorder collects results from parallel tests.
type Recorder struct {
	mu sync.Mutex
	s  Summary
}

// NewRecorder starts a summary.
func NewRecorder(mode string) *Recorder {
	return &Recorder{s: Summary{Mode: mode, Started: time.Now().UTC()}}
}

// Scenario records a scenario result.
func (r *Recorder) Scenario(s Scenario) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.s.Scenarios = append(r.s.Scenarios, s)
}

// Hostile records a hostile-input case.
func (r *Recorder) Hostile(h Hostile) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.s.Hostile = append(r.s.Hostile, h)
}

// Write stores the summary as JSON at path.
func (r *Recorder) Write(path, goTest string) error {
	r.mu.Lock()
	s := r.s
	r.mu.Unlock()
	s.Finished = time.Now().UTC()
	s.GoTest = goTest
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadSummary loads a summary written by Write.
func ReadSummary(path string) (Summary, error) {
	var s Summary
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(b, &s)
}

// Fuzz is one fuzz target's run, parsed from `go test -fuzz` output.
type Fuzz struct {
	Target      string
	Passed      bool
	Elapsed     string
	Execs       string
	Interesting string
	Failure     string
}

// ParseFuzzLog reads the last progress line ("fuzz: elapsed: 1m0s, execs:
// 3021883 (50364/sec), new interesting: 12 (total: 212)") and the verdict.
func ParseFuzzLog(target, log string) Fuzz {
	f := Fuzz{Target: target}
	for _, line := range strings.Split(log, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "fuzz: elapsed: "); ok {
			parts := strings.Split(rest, ", ")
			if len(parts) >= 3 {
				f.Elapsed = parts[0]
				f.Execs = strings.TrimPrefix(parts[1], "execs: ")
				f.Interesting = strings.TrimPrefix(parts[2], "new interesting: ")
			}
		}
		if strings.HasPrefix(line, "ok ") {
			f.Passed = true
		}
		if strings.HasPrefix(line, "--- FAIL") || strings.Contains(line, "Failing input written to") {
			f.Failure += line + " "
		}
	}
	if f.Failure != "" {
		f.Passed = false
	}
	return f
}

// Markdown renders the report: the figures and the commands that made them.
func Markdown(w io.Writer, s Summary, fuzz []Fuzz, command string, wall time.Duration) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	passed, lost, dups, dupsOutside, leaked, leakedTemp, corrupt, exports, faults, failOpen := 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
	sideKeys, sideOutlived, sideLeft, sideLinger := 0, 0, 0, int64(0)
	for _, sc := range s.Scenarios {
		sideKeys += sc.SideKeys
		sideOutlived += sc.SideKeysOutlived
		sideLeft += sc.SideKeysLeft
		sideLinger = max(sideLinger, sc.SideKeyLingerMS)
		if sc.Passed {
			passed++
		}
		lost += sc.Lost
		dups += sc.Duplicates
		dupsOutside += sc.DuplicatesOutsideFailOpen
		leaked += sc.LeakedProcesses
		leakedTemp += sc.LeakedTempFiles
		corrupt += sc.CorruptArtifacts
		exports += sc.Exports
		faults += sc.Faults
		failOpen += sc.FailOpen
	}
	rejected := 0
	byIface := map[string][2]int{}
	for _, h := range s.Hostile {
		c := byIface[h.Interface]
		c[1]++
		if h.Passed {
			rejected++
			c[0]++
		}
		byIface[h.Interface] = c
	}
	p("# Reliability report\n\n")
	p("<!-- generated by `make chaos` (internal/testing/chaos/reliability); do not edit by hand -->\n\n")
	p("Produced by:\n\n```sh\n%s\n```\n\n", command)
	p("Chaos tests ran %s → %s (UTC) in mode `%s` on a %d-core machine; "+
		"wall time of the whole `make chaos`, fuzzing included: %s. Logs: `var/chaos/`.\n\n",
		s.Started.Format("2006-01-02 15:04"), s.Finished.Format("15:04"), s.Mode, runtime.NumCPU(), wall.Round(time.Second))
	p("## Figures\n\n")
	p("| figure | value |\n|---|---|\n")
	p("| scenarios passed | %d of %d |\n", passed, len(s.Scenarios))
	p("| exports requested in scenarios | %d |\n", exports)
	p("| faults injected | %d |\n", faults)
	p("| exports lost | %d |\n", lost)
	p("| duplicate renders (all) | %d |\n", dups)
	p("| duplicate renders outside Redis-down (fail-open) windows | %d |\n", dupsOutside)
	p("| exports that failed open | %d |\n", failOpen)
	p("| partial or corrupt artifacts (pdfinfo) | %d |\n", corrupt)
	p("| leaked Chromium processes | %d |\n", leaked)
	p("| leaked temp files (`.tmp-*`) | %d |\n", leakedTemp)
	if sideKeys > 0 {
		p("| keys stored beside tasks (credentials, large documents) watched | %d |\n", sideKeys)
		p("| of them outliving their last owner's final state by over %s | %d (left at the end: %d) |\n", "7 s", sideOutlived, sideLeft)
		p("| longest a side-stored key stayed after its owners were final | %.1f s (watched once a second) |\n", float64(sideLinger)/1000)
	}
	p("| hostile inputs rejected or contained as expected | %d of %d |\n", rejected, len(s.Hostile))
	fuzzOK := 0
	for _, f := range fuzz {
		if f.Passed {
			fuzzOK++
		}
	}
	p("| fuzz targets passed | %d of %d |\n\n", fuzzOK, len(fuzz))

	p("## Scenarios\n\n")
	p("| scenario | fault | result | exports | lost | renders / keys | duplicates (outside fail-open) | fail-open | corrupt | leaked procs | leaked temp | seconds |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	scs := append([]Scenario(nil), s.Scenarios...)
	sort.SliceStable(scs, func(i, j int) bool { return scs[i].Name < scs[j].Name })
	for _, sc := range scs {
		res := "pass"
		if !sc.Passed {
			res = "**FAIL**"
		}
		p("| %s | %s | %s | %d | %d | %d / %d | %d (%d) | %d | %d | %d | %d | %.0f |\n", sc.Name, sc.Fault, res, sc.Exports, sc.Lost,
			sc.Renders, sc.Keys, sc.Duplicates, sc.DuplicatesOutsideFailOpen, sc.FailOpen, sc.CorruptArtifacts, sc.LeakedProcesses, sc.LeakedTempFiles, sc.Seconds)
	}
	p("\n")
	for _, sc := range scs {
		if sc.Notes != "" {
			p("- **%s**: %s\n", sc.Name, sc.Notes)
		}
	}
	p("\n## Hostile inputs\n\n")
	ifaces := make([]string, 0, len(byIface))
	for k := range byIface {
		ifaces = append(ifaces, k)
	}
	sort.Strings(ifaces)
	for _, k := range ifaces {
		p("- %s: %d of %d as expected\n", k, byIface[k][0], byIface[k][1])
	}
	p("\ncli: `bin/enqueue export` exits 2 and stderr names the field; http: `bin/api` answers 400 (413 when too large) with `field`; " +
		"task: raw payload put on the queue with asynq, archived without retries, error naming the field; render: valid requests for hostile pages " +
		"(clear error after retries, or a PDF without anything from forbidden hosts, `pdftotext`).\n")
	p("\n| interface | case | expected | result |\n|---|---|---|---|\n")
	hs := append([]Hostile(nil), s.Hostile...)
	sort.SliceStable(hs, func(i, j int) bool {
		if hs[i].Interface != hs[j].Interface {
			return hs[i].Interface < hs[j].Interface
		}
		return hs[i].Name < hs[j].Name
	})
	for _, h := range hs {
		res := "ok"
		if !h.Passed {
			res = "**FAIL**: " + mdEscape(h.Got)
		}
		p("| %s | %s | %s | %s |\n", h.Interface, mdEscape(h.Name), mdEscape(h.Want), res)
	}
	p("\n## Fuzzing (`go test -fuzz`, internal/spec)\n\n")
	p("| target | result | elapsed | execs | new interesting |\n|---|---|---|---|---|\n")
	for _, f := range fuzz {
		res := "pass"
		if !f.Passed {
			res = "**FAIL** " + mdEscape(f.Failure)
		}
		p("| %s | %s | %s | %s | %s |\n", f.Target, res, f.Elapsed, f.Execs, f.Interesting)
	}
	p("\nSeed corpus: `internal/spec/testdata/fuzz/<Target>/` (run by every `go test ./internal/spec`).\n")
}

func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
