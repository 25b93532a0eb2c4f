// Package platform groups what every pdfexport process shares, whatever
// its stage: the configuration (config) and the Redis clients built from it
// (redisconn), the names of every Redis key and channel (keyspace), the one
// pub/sub subscription of a process (subscription), logging, tracing,
// operator files reloaded while the process runs (reload), which build a
// binary is (buildinfo), redaction of secrets (redact) and the release's
// SBOM step (sbom). Nothing here knows of rendering or of a task's steps.
package platform
