// Package render turns a web page into a PDF with one long-lived headless
// Chromium per Renderer. It promises: a render runs in its own tab, at most
// Config.Concurrency tabs render at once, each render ends by Config.Timeout
// (or the caller's deadline, if sooner) and fails with one of the sentinel
// errors in errors.go, the page waits for its load event, network quiet,
// web fonts and an optional JavaScript condition before printing, every
// request of the tab is checked against the host allowlist (guard.go), and the
// PDF is streamed to the caller through the DevTools IO domain without being
// held in memory. A browser that dies is replaced on the next render; one that
// served Config.MaxRendersPerBrowser renders is replaced once its renders end.
// It does not retry, cache or store anything, and the tab-level guard does not
// see requests made inside cross-site iframes that Chromium moves to another
// process: a network-level proxy is needed for those.
package render
