// Package keyspace names every Redis key and pub/sub channel pdfexport
// uses, and the keys of asynq's own layout that pdfexport reads by hand, in
// one place, as asynq keeps its schema in internal/base/base.go. Nothing
// else in the module spells a key: a rename, a new key or a Cluster slot
// question is reviewed here (keyspace_test.go lists every key with its slot
// group).
//
// Redis Cluster. A Lua script or a MULTI may only touch keys of one slot, so
// keys that one script writes together carry one hash tag ("{…}"):
//
//   - a render lock's family (Lock, Fence, Done, Released) is tagged with the
//     lock id, {K}: the gate's scripts touch all of them;
//   - a final record (Final) and its finishing marker (Finishing) share a
//     slot: Finish writes both in one script;
//   - a task's own keys beside it (Credentials, Passwords, PageSecrets, Progress) are
//     tagged with its id, {T}: no script needs them together today, and
//     the tag keeps that possible;
//   - asynq tags its keys with the queue, {queue} (its scripts touch a
//     queue's sets and task hashes together).
//
// Every other key stands alone (each script touches one key) and may land
// on any slot; a document (HTML) is tagged with its digest, so that the
// digest, not the shared prefix, picks the slot. The names and their
// formats are those v0.1.0 (commit 6484386) writes: renaming one strands
// what queued exports stored (docs/COMPATIBILITY.md).
package keyspace

import (
	"strconv"
	"strings"
)

// Prefix starts every key and channel of pdfexport's own.
const Prefix = "pdfexport:"

// Render locks (internal/lock), per lock id K, on K's slot.

// Lock is the render lock of K: who renders it, under which lease.
func Lock(id string) string { return Prefix + "{" + id + "}:lock" }

// Fence is K's fencing counter: a storage write carries its value.
func Fence(id string) string { return Prefix + "{" + id + "}:fence" }

// Done records that K's artifact is stored (its etag), for waiters.
func Done(id string) string { return Prefix + "{" + id + "}:done" }

// Released is the sharded channel announcing that K's lock was released.
func Released(id string) string { return Prefix + "{" + id + "}:released" }

// Final states and what ends an export (internal/tasks/outcome).

// FinalChannel is the sharded channel of final outcomes.
const FinalChannel = Prefix + "final"

// Final holds the recorded final state of a task (a spec.Final): written
// once, by the first Finish, it is what status readers trust over asynq's
// state (a task canceled while it completed is completed), and what tells a
// task run again from the dashboard that its export is over.
func Final(taskID string) string { return Prefix + "final:" + taskID }

// FinishingIndex is the sorted set of exports whose final steps may not all
// have run, scored by when Finish began (unix ms).
const FinishingIndex = Prefix + "finishing"

// Finishing is the marker of a recorded export's final steps still owed. It
// lives on Final(taskID)'s slot, so that one script writes both: the
// record's own hash tag when its key has one, else a tag of the record's
// whole key, or, when a task id's braces make that impossible, a tag found
// to hash to the record's slot.
func Finishing(taskID string) string {
	k := Final(taskID)
	if i := strings.IndexByte(k, '{'); i >= 0 {
		if j := strings.IndexByte(k[i+1:], '}'); j > 0 {
			return k + ":finishing"
		}
	}
	if !strings.Contains(k, "}") {
		return "{" + k + "}:finishing"
	}
	slot := Slot(k)
	for n := 0; ; n++ { // about 16,384 tries for a slot: only for odd ids
		tag := "s" + strconv.Itoa(n)
		if Slot(tag) == slot {
			return Prefix + "finishing:{" + tag + "}:" + taskID
		}
	}
}

// Cancel marks an export as canceled by request; the worker running it
// checks it when its context is canceled, and status readers when asynq
// shows the task archived.
func Cancel(taskID string) string { return Prefix + "cancel:" + taskID }

// Progress is the hash that counts a manual's stored chapters while it
// runs: "total" (its distinct chapters) and one "k:<chapter key>" field per
// chapter stored, whichever worker stored it.
func Progress(taskID string) string { return Prefix + "progress:{" + taskID + "}" }

// Stored is exportclient's record of an export answered from storage
// without a task.
func Stored(taskID string) string { return Prefix + "stored:" + taskID }

// DoorbellChannel is the sharded channel enqueuers ring with a queue's name
// (internal/queue/doorbell).
const DoorbellChannel = Prefix + "doorbell"

// WorkerPrefix starts every worker process's announcement (internal/queue/fleet).
const WorkerPrefix = Prefix + "worker:"

// Worker is the announcement of the worker process pid on host.
func Worker(host string, pid int) string { return WorkerPrefix + host + ":" + strconv.Itoa(pid) }

// Data beside a task (internal/storage/sidestore).

// Credentials holds a task's per-export source credentials.
func Credentials(taskID string) string { return Prefix + "credentials:{" + taskID + "}" }

// Passwords holds a task's encryption passwords.
func Passwords(taskID string) string { return Prefix + "passwords:{" + taskID + "}" }

// PageSecrets holds a task's options.page headers and cookies.
func PageSecrets(taskID string) string { return Prefix + "page-secrets:{" + taskID + "}" }

// IdentityKey holds the random key of the secrets' keyed identities.
const IdentityKey = Prefix + "credentials:hmac-key"

// HTML holds a large document by the hex SHA-256 of its text, shared by its
// owners.
func HTML(sha256 string) string { return Prefix + "html:{" + sha256 + "}" }

// HTMLIndex is the sorted set of stored documents' digests, for the sweep.
const HTMLIndex = Prefix + "html-index"

// asynq's layout, as the vendored asynq writes it
// (third_party/asynq/internal/base/base.go, internal to asynq):
// TestAsynqLayout has the real asynq write each and fails when it moves.

// AsynqQueues is the set of every queue any client enqueued to
// (base.AllQueues).
const AsynqQueues = "asynq:queues"

// AsynqServers and AsynqWorkers are the sorted sets of running servers and
// their active workers (base.AllServers, base.AllWorkers); the per-server
// keys start with them too.
const (
	AsynqServers = "asynq:servers"
	AsynqWorkers = "asynq:workers"
)

// AsynqTask is a task's hash (base.TaskKey); its AsynqTaskState field holds
// the task's state ("pending", …, "completed", "archived"), AsynqTaskResult
// what its handler wrote with its ResultWriter.
func AsynqTask(queue, taskID string) string { return "asynq:{" + queue + "}:t:" + taskID }

// Fields of AsynqTask read by hand.
const (
	AsynqTaskState  = "state"
	AsynqTaskResult = "result"
)

// AsynqArchived is a queue's sorted set of archived task ids, scored by
// archive time in unix seconds (base.ArchivedKey).
func AsynqArchived(queue string) string { return "asynq:{" + queue + "}:archived" }

// Slot is Redis Cluster's hash slot of key: CRC16 (XMODEM) of its hash tag
// (the text between its first "{" and the first "}" after it, when not
// empty) or of the whole key, modulo 16384.
func Slot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}
