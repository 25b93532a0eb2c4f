package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pdfexport/pdfexport/internal/api/apiauth"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// maxWaitersLimit bounds API_MAX_WAITERS: past it, file descriptors and
// Redis polls run out before the cap means anything.
const maxWaitersLimit = 100_000

// maxLinkWait bounds LINK_WAIT: a link's answer must come before the API's
// write timeout (api.MaxWait + 30 s), and a reader gives up long before.
const maxLinkWait = 60 * time.Second

// CheckAPI adds the rules only the HTTP API (bin/api)
// needs: API_MAX_WAITERS in range, API_CLIENTS_FILE loads, its queues
// are QUEUES' and no client holds API_TOKEN, LINK_SECRET parses and
// LINK_WAIT is in range (MANUALS_FILE is loaded by the API itself). The result is an *Error
// (exit 2) or nil; an error names the client and the field, never a token.
func (c Config) CheckAPI() error {
	var vars []VarError
	if c.APIMaxWaiters < 1 || c.APIMaxWaiters > maxWaitersLimit {
		vars = append(vars, VarError{Var: "API_MAX_WAITERS", Reason: fmt.Sprintf("must be between 1 and %d, got %d", maxWaitersLimit, c.APIMaxWaiters)})
	}
	if c.APIClientsFile != "" {
		if _, err := apiauth.Load(c.APIClientsFile, apiauth.Rules{APIToken: c.APIToken, Queues: c.QueueNames()}); err != nil {
			vars = append(vars, VarError{Var: "API_CLIENTS_FILE", Reason: c.APIClientsFile + ": " + err.Error()})
		}
	}
	if c.LinkSecret != "" {
		if _, err := spec.ParseLinkSecrets(c.LinkSecret); err != nil {
			vars = append(vars, VarError{Var: "LINK_SECRET", Reason: err.Error()})
		}
	}
	if c.LinkWait < time.Second || c.LinkWait > maxLinkWait {
		vars = append(vars, VarError{Var: "LINK_WAIT", Reason: fmt.Sprintf("must be between 1s and %s, got %s", maxLinkWait, c.LinkWait)})
	}
	if r := c.GotenbergRootPath; !strings.HasPrefix(r, "/") || !strings.HasSuffix(r, "/") || strings.ContainsAny(r, " {}\t\n") {
		vars = append(vars, VarError{Var: "GOTENBERG_ROOT_PATH", Reason: fmt.Sprintf("must start and end with / and hold no spaces or braces, got %q", r)})
	}
	if len(vars) > 0 {
		return &Error{Vars: vars}
	}
	return nil
}

// QueueNames are the queues of QUEUES, sorted.
func (c Config) QueueNames() []string {
	names := make([]string, 0, len(c.QueueWeights))
	for q := range c.QueueWeights {
		names = append(names, q)
	}
	slices.Sort(names)
	return names
}
