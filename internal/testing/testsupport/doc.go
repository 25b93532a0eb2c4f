// Package testsupport starts the real servers the integration tests run
// against (redis-server, Chromium, the S3 server) on free loopback ports, one
// instance per test, stopped with t.Cleanup. Nothing it starts outlives the
// test, and it never relies on a server already running on the machine: a
// missing binary fails the test with the command that installs it.
package testsupport

import "testing"

// SkipShort skips the test under -short, which runs what needs no
// server, browser or build of the binaries (make test-short: a minute).
func SkipShort(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: this test needs " + what)
	}
}
