// Package lock makes sure one artifact is rendered once at a time across every
// worker process: a Redis render mutex (SET NX PX with a random token, a
// fencing counter, token-checked release and lease renewal in Lua) and a gate
// that lets the first caller in and makes every other caller wait for the
// holder's release, woken by pub/sub with polling as a fallback.
//
// It promises mutual exclusion only while Redis keeps its data and the
// holder's lease is renewed: a holder that loses its lease has its context
// cancelled with ErrLockLost and must not publish its work. It does not
// promise exactly-once rendering when Redis is unreachable: then the gate
// fails open (a duplicate render is acceptable, a failed export is not), and
// create-only storage keeps the first artifact.
package lock
