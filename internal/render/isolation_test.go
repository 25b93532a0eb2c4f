package render

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// setStateJS leaves state of every kind a script can leave behind, each
// value marked with prefix: a script cookie, localStorage, IndexedDB, Cache
// Storage and a service worker (registered from /sw.js, it answers
// /sw-probe).
func setStateJS(prefix string) string {
	return fmt.Sprintf(`(async () => {
		document.cookie = "js=%[1]s-JS-COOKIE; max-age=3600; path=/";
		localStorage.setItem("k", "%[1]s-LOCAL-STORAGE");
		await new Promise((res, rej) => {
			const o = indexedDB.open("secretdb", 1);
			o.onupgradeneeded = () => o.result.createObjectStore("s");
			o.onsuccess = () => { const tx = o.result.transaction("s", "readwrite"); tx.objectStore("s").put("%[1]s-IDB", "k"); tx.oncomplete = res; tx.onerror = rej; };
			o.onerror = rej;
		});
		const c = await caches.open("secret-cache");
		await c.put("/cached-entry", new Response("%[1]s-CACHE-STORAGE"));
		await navigator.serviceWorker.register("/sw.js?m=%[1]s");
		await navigator.serviceWorker.ready;
	})()`, prefix)
}

// seeStateJS resolves to a description of every kind of state setStateJS
// leaves that the document finds.
const seeStateJS = `(async () => {
	const seen = [];
	seen.push("cookie: [" + document.cookie + "]");
	seen.push("localStorage: [" + localStorage.getItem("k") + "]");
	const dbs = await indexedDB.databases();
	seen.push("idb: [" + dbs.map(d => d.name).join(",") + "]");
	for (const d of dbs) {
		const db = await new Promise(r => { const o = indexedDB.open(d.name); o.onsuccess = () => r(o.result); });
		if (db.objectStoreNames.contains("s")) {
			seen.push("idb value: [" + await new Promise(r => { const g = db.transaction("s").objectStore("s").get("k"); g.onsuccess = () => r(g.result); }) + "]");
		}
	}
	const keys = await caches.keys();
	seen.push("caches: [" + keys.join(",") + "]");
	for (const k of keys) {
		const m = await (await caches.open(k)).match("/cached-entry");
		if (m) seen.push("cache value: [" + await m.text() + "]");
	}
	const regs = await navigator.serviceWorker.getRegistrations();
	seen.push("service workers: [" + regs.map(r => r.active ? r.active.scriptURL : "pending").join(",") + "]");
	seen.push("controlled: [" + (navigator.serviceWorker.controller ? navigator.serviceWorker.controller.scriptURL : "") + "]");
	seen.push("sw-probe: [" + await (await fetch("/sw-probe")).text() + "]");
	return seen.join("\n");
})()`

// isolationSite serves, on two sites (127.0.0.1 and localhost, one server):
// /set, which leaves state of every kind behind (a server cookie, script
// state, a service worker and a cacheable script) and embeds /set-frame from
// the other site, which leaves its own script state and cacheable script in
// the cross-site frame; and /see and /see-frame, which print what of it they
// find. otherOrigin is the frames' origin.
func isolationSite(t *testing.T) (s *site, otherOrigin string) {
	s = newSite(t, func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch req.URL.Path {
		case "/set":
			http.SetCookie(w, &http.Cookie{Name: "srv", Value: "SECRET-A-SERVER-COOKIE", MaxAge: 3600, Path: "/"})
			fmt.Fprintf(w, `<!doctype html><h1>SETTER</h1><script src="/cached.js"></script><script>
				const frameDone = new Promise(r => addEventListener("message", e => r(e.data)));
				%s.then(() => frameDone).then(f => { document.body.append("SET-DONE " + f); window.__done = true; },
				          e => { document.body.append("SET-FAILED " + e); window.__done = true; });
				</script><iframe src="%s/set-frame"></iframe>`, setStateJS("SECRET-A"), otherOrigin)
		case "/set-frame":
			fmt.Fprintf(w, `<!doctype html><script src="/cached-frame.js"></script><script>
				%s.then(() => parent.postMessage("FRAME-SET-DONE", "*"), e => parent.postMessage("FRAME-SET-FAILED " + e, "*"));
				</script>`, setStateJS("SECRET-F"))
		case "/see":
			fmt.Fprintf(w, `<!doctype html><h1>SEER</h1><p>server saw cookies: [%s]</p><script src="/cached.js"></script><pre id=o></pre><pre id=f></pre><script>
				const frameSaw = new Promise(r => addEventListener("message", e => r(e.data)));
				%s.then(s => { document.getElementById("o").textContent = s; return frameSaw; })
				  .then(f => { document.getElementById("f").textContent = "frame saw:\n" + f; })
				  .catch(e => document.body.append("SEE-FAILED " + e)).then(() => { document.body.append("SEE-DONE"); window.__done = true; });
				</script><iframe src="%s/see-frame" style="display:none"></iframe>`, strings.ReplaceAll(req.Header.Get("Cookie"), "<", ""), seeStateJS, otherOrigin)
		case "/see-frame":
			fmt.Fprintf(w, `<!doctype html><script src="/cached-frame.js"></script><script>
				%s.then(s => parent.postMessage(s, "*"), e => parent.postMessage("FRAME-SEE-FAILED " + e, "*"));
				</script>`, seeStateJS)
		case "/cached.js", "/cached-frame.js":
			w.Header().Set("Content-Type", "text/javascript")
			w.Header().Set("Cache-Control", "public, max-age=3600")
			fmt.Fprint(w, "window.__cached = 1;")
		case "/sw.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `const marker = new URL(location).searchParams.get("m");
				self.addEventListener("activate", e => e.waitUntil(self.clients.claim()));
				self.addEventListener("fetch", e => { if (new URL(e.request.url).pathname === "/sw-probe") e.respondWith(new Response(marker + "-SW-RESPONSE")); });`)
		case "/sw-probe":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "network")
		default:
			http.NotFound(w, req)
		}
	})
	return s, "http://localhost:" + s.URL[strings.LastIndexByte(s.URL, ':')+1:]
}

// TestRender_RendersAreIsolated: render A sets cookies, storage, caches and a
// service worker on an allowed origin and in a cross-site frame of another
// allowed origin (out of process in the full browser); render B on the same
// pages prints what the page and its frame see, and none of A's state is
// there, on both Chromium builds. The peer's bare tabs in one shared
// context (peer_test.go) do leak the same pages' state, in the page and in
// the frame, which shows the test can see a leak.
func TestRender_RendersAreIsolated(t *testing.T) {
	t.Parallel()
	wait := settings(spec.Options{WaitFor: "window.__done === true"})
	for build, path := range testsupport.ChromiumBuilds(t) {
		for _, tc := range []struct {
			name               string
			sessionA, sessionB string
			fetches            int // of each cacheable script: 1 when B used A's HTTP cache
		}{
			{"context per render (default)", "", "", 2},
			{"different sessions", "manual-1", "manual-2", 2},
			// One session keeps its context and HTTP cache, and clears
			// its cookies and storage between renders.
			{"one session", "manual-1", "manual-1", 1},
			// The full browser gives a session's renders contexts of
			// their own.
			{"one session, full browser", "manual-1", "manual-1", 2},
		} {
			if (tc.name == "one session") != (build == "headless-shell") && strings.HasPrefix(tc.name, "one session") {
				continue // each build has its own expectation of a session
			}
			t.Run(build+"/"+tc.name, func(t *testing.T) {
				s, other := isolationSite(t)
				allow := allowlist.MustParse(s.hostPort() + "," + strings.TrimPrefix(other, "http://"))
				r := newRenderer(t, Config{ChromiumPath: path, AllowedHosts: allow, Timeout: 20 * time.Second})
				a := mustRender(t, r, Source{URL: s.URL + "/set", Session: tc.sessionA}, wait)
				if text := pdfText(t, a.pdf); !strings.Contains(text, "SET-DONE FRAME-SET-DONE") {
					t.Fatalf("render A did not set its state in the page and the frame:\n%s", text)
				}
				b := mustRender(t, r, Source{URL: s.URL + "/see", Session: tc.sessionB}, wait)
				text := pdfText(t, b.pdf)
				t.Logf("render B saw:\n%s", text)
				if !strings.Contains(text, "SEE-DONE") || !strings.Contains(text, "frame saw:") || strings.Contains(text, "SEE-FAILED") {
					t.Fatalf("render B did not finish looking")
				}
				if strings.Contains(text, "SECRET") {
					t.Errorf("render B saw state of render A")
				}
				for _, p := range []string{"/cached.js", "/cached-frame.js"} {
					if n := s.count(p); n != tc.fetches {
						t.Errorf("%s fetched %d times, want %d (render B may use A's HTTP cache only in A's session)", p, n, tc.fetches)
					}
				}
			})
		}
		t.Run(build+"/the peer's shared context leaks (sanity check of the test)", func(t *testing.T) {
			s, _ := isolationSite(t)
			p := newPeer(t, path)
			if text := pdfText(t, peerPDF(t, p, Source{URL: s.URL + "/set"}, wait, "")); !strings.Contains(text, "SET-DONE FRAME-SET-DONE") {
				t.Fatalf("the peer's render A did not set its state in the page and the frame:\n%s", text)
			}
			text := pdfText(t, peerPDF(t, p, Source{URL: s.URL + "/see"}, wait, ""))
			for _, want := range []string{"SECRET-A", "SECRET-F"} {
				if !strings.Contains(text, want) {
					t.Errorf("the peer's shared context showed nothing of render A's %s state: the test cannot see a leak there\n%s", want, text)
				}
			}
		})
	}
}
