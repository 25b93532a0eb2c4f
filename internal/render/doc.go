// Package render turns a web page into a PDF with one long-lived headless
// Chromium per Renderer. It promises: a render runs in its own tab in its own
// browser context (no cookie, storage, service worker or cache of one render
// is visible to another), at most Config.Concurrency tabs render at once, each
// render ends by Config.Timeout (or the caller's deadline, if sooner) and
// fails with one of the sentinel errors in errors.go, the page waits for its
// load event, network quiet, web fonts and an optional JavaScript condition
// before printing, and the PDF is streamed to the caller through the DevTools
// IO domain without being held in memory. A browser that dies is replaced on
// the next render; one that served Config.MaxRendersPerBrowser renders is
// replaced once its renders end. It does not retry, cache or store anything.
//
// Egress policy (guard.go, proxy.go): two layers enforce Config.AllowedHosts.
// The tab-level guard (Fetch interception) fails every request of the tab's
// own process to a scheme other than http(s), ws(s), data:, blob: or about:
// (file: included) or to a host off the allowlist, and turns a blocked main
// document into ErrBlocked. It does not see WebSockets, requests of
// cross-site frames (another process), of service workers or Chromium's own
// background traffic. The egress proxy sees all of those: Chromium sends
// every network request through it, loopback included, and it allows a
// connection only when the host passes AllowsHost and the address it dials,
// resolved once, passes AllowsAddr. WebRTC may not use UDP. Neither layer
// sees requests Chromium never makes over the network (file: is the tab
// guard's).
package render
