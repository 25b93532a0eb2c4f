// Package sourceauth holds the credentials the renderer adds to the requests
// of private sources: operator rules from SOURCE_AUTH_FILE (headers and
// cookies per host pattern, values from the environment or files, reloaded on
// SIGHUP or when a file changes) and the per-export credentials a task brings.
// The renderer's egress proxy applies them to every request to a matching
// host, whichever frame or worker of the page makes it, and to no other host.
package sourceauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/pdfexport/pdfexport/internal/platform/reload"
	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// Rules are the operator's credentials by host.
type Rules struct {
	rules []rule
	files []string // files the values came from, watched for changes
	// Narrowed says, per hosts entry written before the origin rule, what
	// it matches now (https only; port 443 unless it names one): the
	// worker logs them at start.
	Narrowed []string
}

type rule struct {
	hosts allowlist.Origins
	creds spec.Credentials
}

// For returns the credentials of every rule whose hosts match the origin
// scheme://host:port (scheme https or http; wss and ws count as those),
// merged in file order (a later rule wins on the same header or cookie).
// A nil *Rules has none.
func (r *Rules) For(scheme, host, port string) spec.Credentials {
	var c spec.Credentials
	if r == nil {
		return c
	}
	for _, ru := range r.rules {
		if ru.hosts.Allows(scheme, host, port) {
			c = c.Merge(ru.creds)
		}
	}
	return c
}

// Len is the number of rules.
func (r *Rules) Len() int {
	if r == nil {
		return 0
	}
	return len(r.rules)
}

// fileRule is one rule as written in SOURCE_AUTH_FILE.
type fileRule struct {
	Hosts   string            `json:"hosts"`
	Headers map[string]string `json:"headers"`
	Cookies []spec.Cookie     `json:"cookies"`
}

// MaxFileBytes bounds SOURCE_AUTH_FILE and every file a value names.
const MaxFileBytes = reload.MaxFileBytes

// Env and ReadFile resolve env: and file: values; Load uses the process's.
type (
	Env      = reload.Env
	ReadFile = reload.ReadFile
)

// Load reads and parses SOURCE_AUTH_FILE.
func Load(path string) (*Rules, error) {
	r, _, err := load(path)
	return r, err
}

// load is Load that also returns, on error too, the files the rules' file:
// values name, read or not, so a watcher notices one that appears later.
func load(path string) (*Rules, []string, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, nil, err
	}
	return parse(data, os.LookupEnv, readBounded)
}

func readBounded(path string) ([]byte, error) { return reload.ReadBounded(path) }

// Parse parses the JSON of SOURCE_AUTH_FILE: {"rules": [{"hosts": "<origins>",
// "headers": {"Name": "value"}, "cookies": [{"name", "value", "path"}]}]},
// where hosts is a comma-separated list of origins (a bare host, host:port
// or *.suffix, or https://…, is https only, on port 443 unless a port is
// given; plain http needs http://host:port) and a value is "env:NAME",
// "file:PATH" (its content, one trailing newline dropped) or a literal.
// Every error names the rule and the field, never a value.
func Parse(data []byte, env Env, readFile ReadFile) (*Rules, error) {
	r, _, err := parse(data, env, readFile)
	return r, err
}

// parse is Parse that also returns the files the file: values name, those
// that could not be read included.
func parse(data []byte, env Env, readFile ReadFile) (*Rules, []string, error) {
	var doc struct {
		Rules []fileRule `json:"rules"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, nil, fmt.Errorf("not the JSON of a rules file ({\"rules\": [{\"hosts\", \"headers\", \"cookies\"}]}): %w", err)
	}
	out := &Rules{}
	var named []string
	var errs []error
	for i, fr := range doc.Rules {
		field := func(f string) string { return fmt.Sprintf("rules[%d].%s", i, f) }
		hosts, narrowed, err := allowlist.ParseOrigins(fr.Hosts)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", field("hosts"), err))
		case hosts.Empty():
			errs = append(errs, fmt.Errorf("%s: required (host, host:port, *.suffix or http://host:port, comma-separated)", field("hosts")))
		}
		for _, n := range narrowed {
			out.Narrowed = append(out.Narrowed, fmt.Sprintf("%s: %s", field("hosts"), n))
		}
		if len(fr.Headers) == 0 && len(fr.Cookies) == 0 {
			errs = append(errs, fmt.Errorf("rules[%d]: has neither headers nor cookies", i))
		}
		var c spec.Credentials
		resolve := func(f, raw string) (string, bool) {
			if p, ok := strings.CutPrefix(raw, "file:"); ok {
				named = append(named, p)
			}
			v, file, err := resolveValue(raw, env, readFile)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", f, err))
				return "", false
			}
			if file != "" {
				out.files = append(out.files, file)
			}
			return v, true
		}
		for _, name := range slices.Sorted(maps.Keys(fr.Headers)) {
			f := field(fmt.Sprintf("headers[%q]", name))
			v, ok := resolve(f, fr.Headers[name])
			if !ok {
				continue
			}
			if err := spec.CheckHeader(name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", f, err))
				continue
			}
			c = c.Merge(spec.Credentials{Headers: map[string]string{name: v}})
		}
		for j, ck := range fr.Cookies {
			f := field(fmt.Sprintf("cookies[%d]", j))
			v, ok := resolve(f+".value", ck.Value)
			if !ok {
				continue
			}
			ck.Value = v
			if err := ck.Check(); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", f, err))
				continue
			}
			c = c.Merge(spec.Credentials{Cookies: []spec.Cookie{ck}})
		}
		out.rules = append(out.rules, rule{hosts: hosts, creds: c})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, named, err
	}
	return out, named, nil
}

// ResolveValue turns "env:NAME", "file:PATH" (the file's content, one
// trailing newline dropped) or a literal into the value, reading the process's
// environment and files (the CLI's --source-header and --source-cookie).
func ResolveValue(raw string) (string, error) {
	v, _, err := resolveValue(raw, os.LookupEnv, readBounded)
	return v, err
}

// resolveValue turns "env:NAME", "file:PATH" or a literal into the value; file
// is the path a file: value read.
func resolveValue(raw string, env Env, readFile ReadFile) (value, file string, err error) {
	return reload.Value(raw, env, readFile)
}
