// Package manuals is the registry of MANUALS_FILE: the manuals a reader
// download link (GET /v1/manuals/{manual_id}/{version}.pdf on bin/api)
// may ask for, each with its source (a url or chapters, in which
// "{version}" and "{manual}" are substituted), its print options, the query
// parameters a link may add (allow_query: paper, landscape), the versions
// it has (versions: a pattern) and who may follow its links (links:
// signed, the default, or public).
//
// The file is YAML or JSON; every entry is checked when it loads (sources
// against ALLOWED_HOSTS, options by the contract's rules), and a bad entry
// is reported by name. It is reloaded on SIGHUP and when it changes
// (internal/platform/reload); a reload that fails keeps the registry in force.
package manuals

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pdfexport/pdfexport/internal/platform/reload"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// Query parameters a manual's allow_query may name.
const (
	QueryPaper     = "paper"
	QueryLandscape = "landscape"
)

// Links: who may follow a manual's links.
const (
	LinksSigned = "signed" // a LINK_SECRET signature or an API token (the default)
	LinksPublic = "public" // anyone: public docs
)

// ErrUnknownVersion matches the error of a version the manual's versions
// pattern does not match.
var ErrUnknownVersion = errors.New("manuals: no such version")

// ErrUnknownParameter matches the error of a link query naming a parameter
// its manual does not allow; ErrBadParameter one whose value is wrong. Both
// are a *ParameterError naming the parameter.
var (
	ErrUnknownParameter = errors.New("manuals: parameter not allowed")
	ErrBadParameter     = errors.New("manuals: bad parameter value")
)

// ParameterError is a link's query parameter that Request refuses.
type ParameterError struct {
	Name string // the parameter
	Err  error  // ErrUnknownParameter or ErrBadParameter
	Why  string
}

func (e *ParameterError) Error() string { return e.Err.Error() + ": " + e.Name + " " + e.Why }
func (e *ParameterError) Unwrap() error { return e.Err }

// Manual is one entry of the registry.
type Manual struct {
	ID         string
	URL        string         // with {version} and {manual} unsubstituted
	Chapters   []spec.Chapter // ditto in url, title and revision
	Options    spec.Options
	AllowQuery []string // of QueryPaper, QueryLandscape
	Links      string   // LinksSigned or LinksPublic
	Queue      string   // "": the API's default queue
	// Versions, when set, is the pattern every version of a link must
	// match (whole): a public manual's readers cannot then have a render
	// made of any version name they invent.
	Versions *regexp.Regexp
}

// Public reports whether anyone may follow the manual's links.
func (m *Manual) Public() bool { return m.Links == LinksPublic }

// Request is the export of version that a link with query asks for.
// Parameters other than the signature's (spec.LinkExpires,
// spec.LinkSignature) must be in the manual's allow_query; the error names
// the first that is not (ErrUnknownParameter) or has a bad value
// (ErrBadParameter). The request still has to pass Validate: the version's
// rules are the contract's.
func (m *Manual) Request(version string, query url.Values) (spec.Request, error) {
	if m.Versions != nil && !m.Versions.MatchString(version) {
		return spec.Request{}, fmt.Errorf("%w: %s of manual %s (its versions match %s)", ErrUnknownVersion, version, m.ID, m.Versions)
	}
	opts := m.Options
	names := make([]string, 0, len(query))
	for k := range query {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := query[k]
		if k == spec.LinkExpires || k == spec.LinkSignature {
			continue
		}
		if !slices.Contains(m.AllowQuery, k) {
			return spec.Request{}, &ParameterError{Name: k, Err: ErrUnknownParameter, Why: fmt.Sprintf("(manual %s allows %s)", m.ID, allowed(m.AllowQuery))}
		}
		if len(v) != 1 {
			return spec.Request{}, &ParameterError{Name: k, Err: ErrBadParameter, Why: fmt.Sprintf("given %d times", len(v))}
		}
		switch k {
		case QueryPaper:
			opts.Paper = v[0]
		case QueryLandscape:
			b, err := strconv.ParseBool(v[0])
			if err != nil {
				return spec.Request{}, &ParameterError{Name: k, Err: ErrBadParameter, Why: fmt.Sprintf("must be true or false, got %q", v[0])}
			}
			opts.Landscape = b
		}
	}
	sub := strings.NewReplacer("{version}", version, "{manual}", m.ID)
	r := spec.Request{V: spec.PayloadVersion, ManualID: m.ID, Version: version, Options: opts}
	if m.Chapters != nil {
		r.Source.Chapters = make([]spec.Chapter, len(m.Chapters))
		for i, c := range m.Chapters {
			r.Source.Chapters[i] = spec.Chapter{URL: sub.Replace(c.URL), HTML: c.HTML, Title: sub.Replace(c.Title), Revision: sub.Replace(c.Revision)}
		}
	} else {
		r.Source.URL = sub.Replace(m.URL)
	}
	return r, nil
}

func allowed(q []string) string {
	if len(q) == 0 {
		return "none"
	}
	return strings.Join(q, ", ")
}

// Registry is a loaded MANUALS_FILE.
type Registry struct {
	manuals map[string]*Manual
}

// Get returns the manual named id.
func (r *Registry) Get(id string) (*Manual, bool) {
	if r == nil {
		return nil, false
	}
	m, ok := r.manuals[id]
	return m, ok
}

// Len is the number of manuals.
func (r *Registry) Len() int {
	if r == nil {
		return 0
	}
	return len(r.manuals)
}

// fileManual is one entry as written in the file.
type fileManual struct {
	URL        string          `json:"url"`
	Chapters   []spec.Chapter  `json:"chapters"`
	Options    json.RawMessage `json:"options"`
	AllowQuery []string        `json:"allow_query"`
	Links      string          `json:"links"`
	Queue      string          `json:"queue"`
	Versions   string          `json:"versions"`
}

// Rules tie the file to the rest of the configuration.
type Rules struct {
	// Hosts are ALLOWED_HOSTS: every source must be on it.
	Hosts spec.Hosts
	// Queues are the queues the workers serve; a manual's queue must be
	// one. Empty: not checked.
	Queues []string
}

// probeVersion stands in for {version} when an entry is checked at load.
const probeVersion = "0"

// Parse parses MANUALS_FILE: {"manuals": {"ops-guide": {"url":
// "https://docs.example.com/ops-guide/{version}/print", "options":
// {"paper": "A4"}, "allow_query": ["paper"], "links": "signed"}}}. Every
// error names the manual and the field.
func Parse(data []byte, rules Rules) (*Registry, error) {
	js, err := reload.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("not YAML or JSON: %w", err)
	}
	var doc struct {
		Manuals *map[string]json.RawMessage `json:"manuals"`
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("want {\"manuals\": {\"<manual_id>\": {...}}}: %w", err)
	}
	if doc.Manuals == nil {
		// An empty file, or "manuals:" alone, is most often one caught
		// half-written by a reload: it must not empty the registry.
		// An empty registry is said as "manuals: {}".
		return nil, errors.New(`manuals: missing or null (an empty registry is "manuals: {}")`)
	}
	manuals := *doc.Manuals
	reg := &Registry{manuals: make(map[string]*Manual, len(manuals))}
	ids := make([]string, 0, len(manuals))
	for id := range manuals {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var errs []error
	for _, id := range ids {
		m, err := parseManual(id, manuals[id], rules)
		if err != nil {
			errs = append(errs, fmt.Errorf("manual %s: %w", id, err))
			continue
		}
		reg.manuals[id] = m
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return reg, nil
}

func parseManual(id string, raw json.RawMessage, rules Rules) (*Manual, error) {
	var fm fileManual
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fm); err != nil {
		return nil, err
	}
	m := &Manual{ID: id, URL: fm.URL, Chapters: fm.Chapters, AllowQuery: fm.AllowQuery, Links: fm.Links, Queue: fm.Queue}
	if len(fm.Options) > 0 && string(fm.Options) != "null" {
		od := json.NewDecoder(bytes.NewReader(fm.Options))
		od.DisallowUnknownFields()
		if err := od.Decode(&m.Options); err != nil {
			return nil, fmt.Errorf("options: %w", err)
		}
	}
	var errs []error
	if fm.Versions != "" {
		re, err := regexp.Compile(`^(?:` + fm.Versions + `)$`)
		if err != nil {
			errs = append(errs, fmt.Errorf("versions: not a regular expression: %w", err))
		} else {
			m.Versions = re
		}
	}
	if m.URL != "" && m.Chapters != nil {
		errs = append(errs, errors.New("source: exactly one of url and chapters, not both"))
	}
	switch m.Links {
	case "":
		m.Links = LinksSigned
	case LinksSigned, LinksPublic:
	default:
		errs = append(errs, fmt.Errorf("links: must be %s or %s, got %q", LinksSigned, LinksPublic, m.Links))
	}
	for _, q := range m.AllowQuery {
		if q != QueryPaper && q != QueryLandscape {
			errs = append(errs, fmt.Errorf("allow_query: %q is not %s or %s", q, QueryPaper, QueryLandscape))
		}
	}
	if m.Queue != "" && len(rules.Queues) > 0 && !slices.Contains(rules.Queues, m.Queue) {
		errs = append(errs, fmt.Errorf("queue: %q is not a queue the workers serve (%s)", m.Queue, strings.Join(rules.Queues, ", ")))
	}
	if m.Options.Encryption != nil {
		// Its passwords would sit in the file and in every link's task.
		errs = append(errs, errors.New("options.encryption: not allowed for reader links"))
	}
	// The entry as a request for a probe version: the contract's rules,
	// ALLOWED_HOSTS included, with the field names a request has.
	probe := *m
	probe.Versions = nil // the probe version need not be one of them
	r, _ := probe.Request(probeVersion, nil)
	if err := r.Validate(rules.Hosts); err != nil {
		errs = append(errs, err)
	}
	return m, errors.Join(errs...)
}

// Load reads and parses MANUALS_FILE.
func Load(path string, rules Rules) (*Registry, error) {
	data, err := reload.ReadBounded(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, rules)
}

// Watcher keeps the registry of MANUALS_FILE current.
type Watcher struct{ w *reload.Watcher[Registry] }

// Open loads path and returns its watcher; an error (a file that does not
// parse, a bad entry) is a configuration error naming the variable, the
// file and the manual.
func Open(path string, rules Rules, log *slog.Logger) (*Watcher, error) {
	w, err := reload.Open("MANUALS_FILE", "manuals", path, func(path string) (reload.Loaded[Registry], error) {
		r, err := Load(path, rules)
		return reload.Loaded[Registry]{Value: r}, err
	}, func(r *Registry) []any { return []any{"manuals", r.Len()} }, log)
	if err != nil {
		return nil, err
	}
	return &Watcher{w: w}, nil
}

// Current is the registry in force; nil for a nil Watcher.
func (w *Watcher) Current() *Registry {
	if w == nil {
		return nil
	}
	return w.w.Current()
}

// Reload reads the file again; on error the registry in force stays.
func (w *Watcher) Reload() error { return w.w.Reload() }

// SetPollInterval sets how often the file is checked; call it before Run.
func (w *Watcher) SetPollInterval(d time.Duration) { w.w.PollInterval = d }

// Run reloads on SIGHUP and on file changes until ctx ends.
func (w *Watcher) Run(ctx context.Context) { w.w.Run(ctx) }
