package keyspace

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"

	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// entry is one key or channel of the schema, as built for sample ids.
type entry struct {
	name string // the identifier in keyspace.go
	key  string
	want string // the exact name, as v0.1.0 writes it
	// group names the keys that must share a Cluster slot (one script
	// touches them together); "" stands alone.
	group string
}

// odd is a task id with braces, for which Finishing must still share
// Final's slot.
const odd = "a{}b}"

// schema lists every name the package builds.
var schema = []entry{
	{"Lock", Lock("K"), "pdfexport:{K}:lock", "lock K"},
	{"Fence", Fence("K"), "pdfexport:{K}:fence", "lock K"},
	{"Done", Done("K"), "pdfexport:{K}:done", "lock K"},
	{"Released", Released("K"), "pdfexport:{K}:released", "lock K"},
	{"FinalChannel", FinalChannel, "pdfexport:final", ""},
	{"Final", Final("T"), "pdfexport:final:T", "final T"},
	{"Finishing", Finishing("T"), "{pdfexport:final:T}:finishing", "final T"},
	{"Final", Final("x{T}"), "pdfexport:final:x{T}", "final x{T}"},
	{"Finishing", Finishing("x{T}"), "pdfexport:final:x{T}:finishing", "final x{T}"},
	{"Final", Final(odd), "pdfexport:final:" + odd, "final odd"},
	{"Finishing", Finishing(odd), "", "final odd"}, // a tag found for the slot
	{"FinishingIndex", FinishingIndex, "pdfexport:finishing", ""},
	{"Cancel", Cancel("T"), "pdfexport:cancel:T", ""},
	{"Progress", Progress("T"), "pdfexport:progress:{T}", "task T"},
	{"Stored", Stored("T"), "pdfexport:stored:T", ""},
	{"DoorbellChannel", DoorbellChannel, "pdfexport:doorbell", ""},
	{"WorkerPrefix", WorkerPrefix, "pdfexport:worker:", ""},
	{"Worker", Worker("host-1", 42), "pdfexport:worker:host-1:42", ""},
	{"Credentials", Credentials("T"), "pdfexport:credentials:{T}", "task T"},
	{"Passwords", Passwords("T"), "pdfexport:passwords:{T}", "task T"},
	{"PageSecrets", PageSecrets("T"), "pdfexport:page-secrets:{T}", "task T"},
	{"IdentityKey", IdentityKey, "pdfexport:credentials:hmac-key", ""},
	{"HTML", HTML("ab12"), "pdfexport:html:{ab12}", ""},
	{"HTMLIndex", HTMLIndex, "pdfexport:html-index", ""},
	{"AsynqQueues", AsynqQueues, "asynq:queues", ""},
	{"AsynqServers", AsynqServers, "asynq:servers", ""},
	{"AsynqWorkers", AsynqWorkers, "asynq:workers", ""},
	{"AsynqTask", AsynqTask("q", "T"), "asynq:{q}:t:T", "queue q"},
	{"AsynqArchived", AsynqArchived("q"), "asynq:{q}:archived", "queue q"},
}

// notKeys are the package's exported names that are not keys.
var notKeys = []string{"Prefix", "Slot", "AsynqTaskState", "AsynqTaskResult"}

// TestSchema: every key and channel has the name v0.1.0 writes, starts with
// its prefix, and the keys of one group share a Cluster slot while the
// groups that name different ids do not collapse into one; the table lists
// every name keyspace.go exports.
func TestSchema(t *testing.T) {
	slots := map[string]uint16{}
	for _, e := range schema {
		t.Run(e.name+"/"+e.key, func(t *testing.T) {
			if e.want != "" && e.key != e.want {
				t.Errorf("%s = %q, want %q", e.name, e.key, e.want)
			}
			if !strings.HasPrefix(e.key, Prefix) && !strings.HasPrefix(e.key, "asynq:") && !strings.HasPrefix(e.key, "{"+Prefix) {
				t.Errorf("%s = %q: neither pdfexport's nor asynq's", e.name, e.key)
			}
			if e.group == "" {
				return
			}
			if s, ok := slots[e.group]; ok && s != Slot(e.key) {
				t.Errorf("%s = %q: slot %d, but group %q is on slot %d", e.name, e.key, Slot(e.key), e.group, s)
			}
			slots[e.group] = Slot(e.key)
		})
	}
	if Slot(Lock("K1")) == Slot(Lock("K2")) && Slot(Lock("K1")) == Slot(Lock("K3")) {
		t.Error("the lock tag does not pick the slot: three ids share one")
	}

	f, err := parser.ParseFile(token.NewFileSet(), "keyspace.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for name, obj := range f.Scope.Objects {
		if !ast.IsExported(name) || (obj.Kind != ast.Fun && obj.Kind != ast.Con) || slices.Contains(notKeys, name) {
			continue
		}
		if !slices.ContainsFunc(schema, func(e entry) bool { return e.name == name }) {
			t.Errorf("keyspace.%s is not in the schema table", name)
		}
	}
}

// TestSlot_IsRedisClusters: Slot agrees with the Redis Cluster
// specification's examples and with a real Cluster's CLUSTER KEYSLOT for
// every key of the schema.
func TestSlot_IsRedisClusters(t *testing.T) {
	for key, want := range map[string]uint16{
		"123456789":            12739, // CRC16-XMODEM check value 0x31C3
		"{user1000}.following": Slot("user1000"),
		"foo{{bar}}zap":        Slot("{bar"),
		"foo{bar}{zap}":        Slot("bar"),
	} {
		if got := Slot(key); got != want {
			t.Errorf("Slot(%q) = %d, want %d", key, got, want)
		}
	}
	if Slot("foo{}{bar}") == Slot("bar") {
		t.Error(`Slot("foo{}{bar}") used "bar" as its tag`)
	}

	cl := testsupport.StartRedisCluster(t).Client(t)
	ctx := context.Background()
	for _, e := range schema {
		got, err := cl.ClusterKeySlot(ctx, e.key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if uint16(got) != Slot(e.key) {
			t.Errorf("CLUSTER KEYSLOT %s = %d, Slot = %d", e.key, got, Slot(e.key))
		}
	}
}
