// Package testsupport starts the real servers the integration tests run
// against (redis-server, Chromium, the S3 server) on free loopback ports, one
// instance per test, stopped with t.Cleanup. Nothing it starts outlives the
// test, and it never relies on a server already running on the machine: a
// missing binary fails the test with the command that installs it.
package testsupport
