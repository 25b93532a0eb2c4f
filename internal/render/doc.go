// Package render turns a web page into a PDF with one long-lived headless
// Chromium per Renderer. It promises: a render runs in its own tab in its own
// browser context (no cookie, storage, service worker or cache of one render
// is visible to another, in the page or in its frames; the renders of one
// Source.Session share an HTTP cache and a renderer process, and nothing
// else: see Sessions), at most
// Config.Concurrency tabs render at once, each render ends by Config.Timeout
// (or the caller's deadline, if sooner) and fails with one of the sentinel
// errors in errors.go, the page waits for its load event, the network,
// web fonts and an optional JavaScript condition before printing, and the PDF
// is streamed to the caller through the DevTools IO domain without being held
// in memory. A browser that dies is replaced on the next render; one that
// served Config.MaxRendersPerBrowser renders is replaced once its renders
// end. It does not retry, cache or store anything.
//
// # Stages
//
// Render takes a tab slot and the browser, then runs the stages of one
// render, each a function with the options of its stage (renderJob, in
// render.go) and the page they pass along (tabPage):
//
//   - open a tab (tab.go: openTab, attach): a browser context and tab of
//     the render's own, a spare made ahead, or its session's;
//   - the request guard on (guardPage), then load the source (loadPage:
//     media emulated, a URL to its load event or HTML into the blank page);
//   - wait until ready (waitReady: the network quiet, fonts, wait_for),
//     then check what the page reported (checkPage);
//   - measure (measure: a manual chapter's anchor and heading marks);
//   - print (printPage) and stream the PDF to the sink (streamPDF).
//
// tabRun maps a stage's failure to its sentinel error, and the tab is
// given back (renderTab.release) whatever happened. A new option of the
// page is a field of the options of the one stage that applies it.
//
// # Readiness
//
// After the load event a render waits until no request of the page is in
// flight; for a page that runs script and gave no wait_for, until none
// started for the quiet period (networkQuiet) of the page's virtual time (a
// script may fetch more after load): Chromium runs the page's timers as
// fast as it can while no request is in flight and stops its clock while
// one is, so a timer that would fetch within the period does, and a page
// whose timers fetch nothing is done at once instead of after the whole
// period in real time. The page's clock then stays stopped, as with Chromium's own
// --virtual-time-budget; nothing later waits on the page's timers. On the
// headless shell the period also ends as soon as the page is idle: a probe
// the tab runs before the document's scripts (idle.go) says that nothing is
// scheduled, loading or animating and that nothing ran since the step
// before, and the page uses nothing the probe cannot follow (workers,
// sockets, messages and the like wait the whole period). A static page (no script,
// no inline handler, no frame or plugin) and a page with wait_for skip that
// quiet period: nothing can start a request later but style and layout, and
// wait_for is the page's own word for "ready". Then it forces a layout and
// waits for document.fonts.ready (at most fontsMax), then, if new requests
// started, for them; then for wait_for and the requests in flight after it.
//
// # Frames on demand
//
// On the headless shell a tab makes no compositor frame of its own: it is
// created under BeginFrame control (frames.go) and the render gives it
// frames that run what a page sees of them (requestAnimationFrame,
// intersection observers and so lazy images, animations, layout) but
// raster and draw nothing, since the print lays the page out again for
// paper and paints it into the PDF. A static page (no script) without lazy
// images or running animations gets no frame at all: nothing a frame does
// can change its print. Otherwise the readiness steps give the frames: one
// after the load (a lazy image of the first screen starts loading there, and
// is then waited for, where with Chromium's frames it raced the print), one
// per frame interval of the virtual quiet period until it ends (granted a
// frame interval at a time, so a page that works in animation frames gets
// them in virtual time too) and one after the fonts wait; a page with
// wait_for gets none of those, but a pump at Chromium's own rate while
// wait_for is polled, or,
// when it is true when first asked, one frame if a frame could change the
// print (lazy images, animations). None while the page loads or prints, when its
// main thread is busy anyway. The browser makes one BeginFrame at a time
// (two at once crash its GPU process), and a page whose main thread is busy
// is not waited for longer than beginFrameTimeout per frame, so a page that
// never yields stalls no other render's frames. The full browser has no
// BeginFrame control and keeps Chromium's frames.
//
// # The render design, and why
//
// Isolation by construction: a new browser context per render, created and
// disposed of by us. A tab in the shared default context (the peer's
// design, and Gotenberg's) leaks cookies, storage, service workers and the
// HTTP cache from one render to the next, which the peer's case of
// TestRender_RendersAreIsolated shows; a pool of contexts reset between
// renders must name every origin a render touched, including those of
// out-of-process frames and workers that the tab never sees.
//
// What a context costs is its window. A new browser context has no window,
// so its first tab opens one, and each window of the full Chromium starts
// the web UI of its omnibox popup (chrome://omnibox-popup.top-chrome/ and
// its AI-mode variant) in two renderer processes of its own: two extra
// renderers per render that the peer's tab in the shared window does not
// start. The Renderer therefore:
//
//   - prefers Chromium's headless shell (chromium-headless-shell; package
//     chromium finds it), which has no browser UI at all and a lighter
//     browser process, so a render costs less CPU and a browser starts
//     sooner than with the full browser;
//   - starts any Chromium without the features that create per-window UI
//     (disabledFeatures; TestRender_StartsNoBrowserUI fails if another
//     Chromium adds such UI under a new name);
//   - turns off, in each tab, what chromedp enables but a render does not
//     use: the DOM and CSS agents, console forwarding, target discovery and
//     auto-attach (leanTab), so that no tab hears of every other tab, frame
//     and worker;
//   - lets Chromium keep its shared memory in /dev/shm when that is a tmpfs
//     with at least minDevShmFree free (chromedp's default puts it in files
//     under /tmp, which Docker's small /dev/shm needs, at the price of disk
//     writes);
//   - skips the network quiet period where it cannot change the output
//     (static pages, pages with wait_for), runs it on the page's
//     virtual clock elsewhere, and ends it once the page is idle;
//   - makes the next render's browser context and tab while one renders
//     (spare.go), so that creating and attaching them leave the render's
//     path; the spare is one more blank tab per browser;
//   - answers the guard's paused requests concurrently, and closes a
//     render's tab by disposing of its context;
//   - starts Chromium with --renderer-process-limit=1, which puts a new tab
//     into a running renderer process of its own browser context when there
//     is one (never into another context's); on its own it changes nothing,
//     since every render has a new context, but it is what lets a session
//     keep its renderer (below);
//   - spares the page the layout Chromium does after each print, when
//     nothing of the page can see how (below, "The layout after the
//     print").
//
// The benchmarks of this package (BenchmarkRenderDesign and the others)
// and `make bench` compare the Renderer with the peer's bare tab on the
// same machine in the same run. The machine's speed drifts between runs,
// so compare ratios within one run.
//
// The headless shell runs cross-site frames in the page's process (it does
// not print out-of-process frames, so site isolation must stay off there);
// the tab guard then sees their requests too. The full browser isolates them
// in their own processes, where only the egress proxy sees their requests.
// Both builds are tested for isolation and egress.
//
// # The layout after the print
//
// Page.printToPDF ends by laying the whole page out again for the screen
// (LocalFrame::EndPrinting), though the tab closes next, which on a long
// page is a good part of its renderer's main thread. Where the page cannot
// see the difference, a render makes that layout skip the
// body's contents (print.go, skipLayoutAfterPrint): the page adopts a style
// sheet that locks them (content-visibility: hidden) in any media but
// print, and the render lifts the print media it emulated, so that the
// sheet applies only once the print is over. The print itself is in print
// media, set by Chromium, and prints the pages the peer's bare tab prints
// (TestRender_LayoutAfterPrint). From the lift to the print the page is
// in screen media, so this is done only when nothing of the page runs in
// between: a tab under BeginFrame control (no frame, so no animation frame,
// observer or media query listener), a static page or one whose clock the
// quiet period stopped (so no timer; not a page with wait_for), print media
// asked, no request in flight, for a page that runs script an idle probe
// that saw it use nothing that runs its code from outside (a worker,
// socket, message channel, frame and the like), and no beforeprint handler
// on the window (Chromium runs those before the print starts; afterprint
// handlers run after the PDF is made).
//
// # Sessions
//
// A short chapter of a manual in a fresh context spends a large share of its
// CPU starting a renderer process and warming it (V8, Blink's memory cache,
// code cache, fonts), and more reading the manual's stylesheets and scripts
// again. The renders that name one Source.Session (the
// chapters of one manual export) therefore run in one browser context kept
// between them (session.go), on the headless shell: each in a new tab, made
// ahead in that context while the previous one renders, so that it joins
// the context's running renderer process. Between two renders the context's
// cookies are cleared, and so is the storage (local storage, IndexedDB,
// Cache Storage, service workers, file systems) of every origin a document
// of the last render came from and of every frame's partitioned storage key;
// the one-session case of TestRender_RendersAreIsolated pins that. What
// stays is the HTTP cache, within one caller's one manual, as a reader's
// browser keeps it from page to page. A session's context ends when no
// render took it within sessionIdle, after sessionMaxRenders renders, after
// a failed render, or when a render's documents came from more than
// sessionMaxOrigins origins. Renders with Auth
// (their own proxy) and the full browser (whose out-of-process frames the
// reset cannot reach) get a context of their own.
//
// Virtual time is a renderer process's, not a tab's: once a render stopped
// its page's clock, a later tab of the process loads nothing until the clock
// runs again. A session's render therefore loads on its virtual clock, as
// --virtual-time-budget does (runClock), and a page polled for wait_for runs
// its timers on it at the real clock's pace (pacedClock).
//
// # Egress policy
//
// Two layers enforce Config.AllowedHosts (guard.go, internal/render/egress). The tab-level
// guard (Fetch interception) fails every request of the tab's own process to
// a scheme other than http(s), ws(s), data:, blob: or about: (file: included)
// or to a host off the allowlist, and turns a blocked main document into
// ErrBlocked. It does not see WebSockets, requests of out-of-process frames,
// of service workers or Chromium's own background traffic. The egress proxy
// sees all of those: Chromium sends every network request through it,
// loopback included, and it allows a connection only when the host passes
// AllowsHost and the address it dials, resolved once, passes AllowsAddr.
// WebRTC may not use UDP. Neither layer sees requests Chromium never makes
// over the network (file: is the tab guard's).
//
// # Source credentials
//
// Because every request passes the proxy, the proxy is also where private
// sources get their credentials (internal/render/egress): Config.SourceAuth
// (operator rules) for the origins they match, Source.Auth for the source
// URL's exact origin (scheme, host and port), on a proxy listener of that
// render's own browser context. The proxy serves only the processes the
// worker started (egress.PeerGuard). HTTPS
// tunnels to such hosts are terminated with certificates from the proxy's
// key, which Chromium accepts by SPKI and for no other key; the upstream
// connection verifies the real server. Other tunnels stay opaque.
package render
