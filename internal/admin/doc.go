// Package admin is the worker's operator HTTP surface: liveness, readiness
// of its dependencies, Prometheus metrics (ours and asynq's queue metrics) and
// the asynqmon dashboard. It is a plain http.Handler with no global state.
package admin
