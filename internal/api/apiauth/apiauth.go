// Package apiauth says who calls the HTTP API (bin/api): the clients of
// API_CLIENTS_FILE, each with its own bearer token and the queues it may
// enqueue to, and API_TOKEN, one more client that may enqueue to every
// queue. An export belongs to the client that enqueued it (its envelope's
// client field, spec.Envelope.Client); the API shows it to that client
// only. API_TOKEN's exports record no client, and neither do those of
// bin/enqueue, exportclient and releases before API_CLIENTS_FILE: those are
// API_TOKEN's.
//
// The file is reloaded on SIGHUP and when it, or a file a token names,
// changes (internal/platform/reload); a reload that fails keeps the clients in
// force.
package apiauth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/pdfexport/pdfexport/internal/platform/reload"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// TokenClient is the name API_TOKEN's client has in logs and metrics; no
// client of API_CLIENTS_FILE may take it.
const TokenClient = "API_TOKEN"

// Anonymous is the client of an API without any token (neither API_TOKEN
// nor API_CLIENTS_FILE): everyone, with every queue, seeing the exports
// that record no client.
const Anonymous = "anonymous"

// MinTokenLength is the shortest token API_CLIENTS_FILE accepts.
const MinTokenLength = 16

// DefaultQueues are the queues of a client whose entry names none.
var DefaultQueues = []string{spec.DefaultQueue}

// Client is an authenticated caller of the API.
type Client struct {
	// Name is the client's name: an API_CLIENTS_FILE entry's, TokenClient
	// or Anonymous. It is logged and labels metrics; the token never is.
	Name string
	// Owner is what the exports it enqueues record as their client: Name
	// for a client of API_CLIENTS_FILE, "" for API_TOKEN and Anonymous.
	Owner string
	// Queues it may enqueue to; nil: every queue the workers serve.
	Queues []string
}

// MayEnqueue reports whether c may enqueue to queue.
func (c Client) MayEnqueue(queue string) bool {
	return c.Queues == nil || slices.Contains(c.Queues, queue)
}

// Owns reports whether an export recording client owner (exportclient's
// Status.Client) is c's.
func (c Client) Owns(owner string) bool { return owner == c.Owner }

// Clients are the clients of API_CLIENTS_FILE.
type Clients struct {
	entries []entry
	files   []string // files the tokens came from, watched for changes
}

type entry struct {
	client Client
	digest [sha256.Size]byte // of the token: equal lengths for the comparison
}

// Len is the number of clients.
func (c *Clients) Len() int {
	if c == nil {
		return 0
	}
	return len(c.entries)
}

// authenticate returns the client whose token is token. It compares token
// with every client's in constant time, without stopping at a match, so
// the time it takes says nothing about which token is close or matched.
func (c *Clients) authenticate(digest [sha256.Size]byte) (Client, bool) {
	var found Client
	ok := 0
	if c == nil {
		return found, false
	}
	for _, e := range c.entries {
		eq := subtle.ConstantTimeCompare(digest[:], e.digest[:])
		if eq == 1 {
			found = e.client
		}
		ok |= eq
	}
	return found, ok == 1
}

// fileClient is one client as written in API_CLIENTS_FILE.
type fileClient struct {
	Name   string   `json:"name"`
	Token  string   `json:"token"`
	Queues []string `json:"queues"`
}

// Rules that tie the file to the rest of the configuration.
type Rules struct {
	// APIToken is API_TOKEN; no client may hold the same token.
	APIToken string
	// Queues are the queues the workers serve (QUEUES); a client may name
	// only those. Empty: not checked.
	Queues []string
}

// Parse parses API_CLIENTS_FILE, YAML or JSON: {"clients": [{"name":
// "portal", "token": "env:PORTAL_TOKEN", "queues": ["default"]}]}. A token
// is "env:NAME", "file:PATH" (its content, one trailing newline dropped) or
// a literal, of at least MinTokenLength characters, unique; a name is an
// identifier (letters, digits, '.', '_', '-'), unique, not TokenClient;
// queues default to DefaultQueues. Every error names the client and the
// field, never a token.
func Parse(data []byte, rules Rules, env reload.Env, readFile reload.ReadFile) (*Clients, error) {
	c, _, err := parse(data, rules, env, readFile)
	return c, err
}

// Load reads and parses API_CLIENTS_FILE with the process's environment.
func Load(path string, rules Rules) (*Clients, error) {
	l, err := loader(rules)(path)
	return l.Value, err
}

func loader(rules Rules) reload.Load[Clients] {
	return func(path string) (reload.Loaded[Clients], error) {
		data, err := reload.ReadBounded(path)
		if err != nil {
			return reload.Loaded[Clients]{}, err
		}
		c, named, err := parse(data, rules, os.LookupEnv, reload.ReadBounded)
		l := reload.Loaded[Clients]{Value: c, Named: named}
		if c != nil {
			l.Files = c.files
		}
		return l, err
	}
}

// parse is Parse that also returns the files the file: tokens name, those
// that could not be read included.
func parse(data []byte, rules Rules, env reload.Env, readFile reload.ReadFile) (*Clients, []string, error) {
	js, err := reload.YAMLToJSON(data)
	if err != nil {
		return nil, nil, fmt.Errorf("not YAML or JSON: %w", err)
	}
	var doc struct {
		Clients []fileClient `json:"clients"`
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, nil, fmt.Errorf(`not a clients file ({"clients": [{"name", "token", "queues"}]}): %w`, err)
	}
	if len(doc.Clients) == 0 {
		return nil, nil, errors.New("clients: at least one client is required")
	}
	out := &Clients{}
	var named []string
	var errs []error
	names := map[string]int{}
	tokens := map[[sha256.Size]byte]string{}
	apiToken := sha256.Sum256([]byte(rules.APIToken))
	for i, fc := range doc.Clients {
		where := fmt.Sprintf("clients[%d]", i)
		if fc.Name != "" {
			where = fmt.Sprintf("clients[%d] (%s)", i, fc.Name)
		}
		bad := func(field, format string, args ...any) {
			errs = append(errs, fmt.Errorf("%s.%s: %s", where, field, fmt.Sprintf(format, args...)))
		}
		switch err := spec.ValidateClientName(fc.Name); {
		case err != nil:
			bad("name", "%s", strings.TrimPrefix(err.Error(), "client: "))
		case fc.Name == TokenClient || fc.Name == Anonymous:
			bad("name", "%q is reserved (it names API_TOKEN's client, or everyone when no token is set)", fc.Name)
		default:
			if j, dup := names[fc.Name]; dup {
				bad("name", "taken by clients[%d] already", j)
			}
			names[fc.Name] = i
		}
		if p := reload.Named(fc.Token); p != "" {
			named = append(named, p)
		}
		var digest [sha256.Size]byte
		switch token, file, err := reload.Value(fc.Token, env, readFile); {
		case fc.Token == "":
			bad("token", `required ("env:NAME", "file:PATH" or the token)`)
		case err != nil:
			bad("token", "%v", err)
		case len(token) < MinTokenLength:
			bad("token", "shorter than %d characters; use a random one, e.g. openssl rand -hex 32", MinTokenLength)
		case strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r == 0x7f }):
			bad("token", "contains a space or a control character, which a bearer token cannot carry")
		default:
			if file != "" {
				out.files = append(out.files, file)
			}
			digest = sha256.Sum256([]byte(token))
			if other, dup := tokens[digest]; dup {
				bad("token", "the same as the token of %s; every client needs its own", other)
			} else if rules.APIToken != "" && digest == apiToken {
				bad("token", "the same as API_TOKEN; every client needs its own")
			}
			tokens[digest] = where
		}
		queues := fc.Queues
		if queues == nil {
			queues = DefaultQueues
		}
		if len(queues) == 0 {
			bad("queues", "empty: a client needs at least one queue (omit it for %v)", DefaultQueues)
		}
		for j, q := range queues {
			switch {
			case q == "":
				bad(fmt.Sprintf("queues[%d]", j), "empty")
			case slices.Contains(queues[:j], q):
				bad(fmt.Sprintf("queues[%d]", j), "%q listed twice", q)
			case len(rules.Queues) > 0 && !slices.Contains(rules.Queues, q):
				bad(fmt.Sprintf("queues[%d]", j), "%q is not a queue the workers serve (QUEUES: %s)", q, strings.Join(rules.Queues, ", "))
			}
		}
		out.entries = append(out.entries, entry{client: Client{Name: fc.Name, Owner: fc.Name, Queues: slices.Clone(queues)}, digest: digest})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, named, err
	}
	return out, named, nil
}

// Authenticator authenticates the API's callers: API_TOKEN and the clients
// of API_CLIENTS_FILE, kept current by a watcher. Safe for concurrent use.
type Authenticator struct {
	token   [sha256.Size]byte // of API_TOKEN
	hasTok  bool
	watcher *reload.Watcher[Clients] // nil without API_CLIENTS_FILE
}

// New returns the authenticator of API_TOKEN (apiToken, may be empty) and
// API_CLIENTS_FILE (clientsFile, may be empty); queues are the queues the
// workers serve. A clients file that does not load is an error naming
// API_CLIENTS_FILE (a configuration error).
func New(apiToken, clientsFile string, queues []string, logger *slog.Logger) (*Authenticator, error) {
	a := &Authenticator{token: sha256.Sum256([]byte(apiToken)), hasTok: apiToken != ""}
	if clientsFile != "" {
		w, err := reload.Open("API_CLIENTS_FILE", "API clients", clientsFile, loader(Rules{APIToken: apiToken, Queues: queues}),
			func(c *Clients) []any { return []any{"clients", c.Len()} }, logger)
		if err != nil {
			return nil, err
		}
		a.watcher = w
	}
	return a, nil
}

// Open reports whether the API has no token at all: every caller is
// Anonymous.
func (a *Authenticator) Open() bool { return a == nil || !a.hasTok && a.watcher == nil }

// Authenticate returns the client whose bearer token is token. Without any
// token configured (Open) every caller is Anonymous.
func (a *Authenticator) Authenticate(token string) (Client, bool) {
	if a.Open() {
		return Client{Name: Anonymous}, true
	}
	digest := sha256.Sum256([]byte(token))
	var clients *Clients
	if a.watcher != nil {
		clients = a.watcher.Current()
	}
	c, ok := clients.authenticate(digest)
	// API_TOKEN is compared whatever the clients gave, so a match there
	// takes as long as a miss.
	tok := a.hasTok && subtle.ConstantTimeCompare(digest[:], a.token[:]) == 1
	switch {
	case ok:
		return c, true
	case tok:
		return Client{Name: TokenClient}, true
	}
	return Client{}, false
}

// Clients returns the clients of API_CLIENTS_FILE in force (nil without it).
func (a *Authenticator) Clients() *Clients {
	if a == nil || a.watcher == nil {
		return nil
	}
	return a.watcher.Current()
}

// Reload reads API_CLIENTS_FILE again; on error the clients in force stay.
func (a *Authenticator) Reload() error {
	if a == nil || a.watcher == nil {
		return nil
	}
	return a.watcher.Reload()
}

// Run keeps API_CLIENTS_FILE current (SIGHUP, file changes) until ctx
// ends; without one it returns at once.
func (a *Authenticator) Run(ctx context.Context) {
	if a == nil || a.watcher == nil {
		return
	}
	a.watcher.Run(ctx)
}

// SetPollInterval sets how often API_CLIENTS_FILE is checked for changes
// (tests); call it before Run.
func (a *Authenticator) SetPollInterval(d time.Duration) {
	if a != nil && a.watcher != nil {
		a.watcher.PollInterval = d
	}
}

func digestOf(token string) [sha256.Size]byte { return sha256.Sum256([]byte(token)) }
