package render

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// isolationSite serves /set, which leaves state of every kind behind (a
// server cookie, a script cookie, localStorage, IndexedDB, Cache Storage, a
// service worker and a cacheable script), and /see, which prints what of it
// it finds.
func isolationSite(t *testing.T) *site {
	return newSite(t, func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/set":
			http.SetCookie(w, &http.Cookie{Name: "srv", Value: "SECRET-A-SERVER-COOKIE", MaxAge: 3600, Path: "/"})
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<!doctype html><h1>SETTER</h1><script src="/cached.js"></script><script>
				(async () => {
				  document.cookie = "js=SECRET-A-JS-COOKIE; max-age=3600; path=/";
				  localStorage.setItem("k", "SECRET-A-LOCAL-STORAGE");
				  await new Promise((res, rej) => {
				    const o = indexedDB.open("secretdb", 1);
				    o.onupgradeneeded = () => o.result.createObjectStore("s");
				    o.onsuccess = () => { const tx = o.result.transaction("s", "readwrite"); tx.objectStore("s").put("SECRET-A-IDB", "k"); tx.oncomplete = res; tx.onerror = rej; };
				    o.onerror = rej;
				  });
				  const c = await caches.open("secret-cache");
				  await c.put("/cached-entry", new Response("SECRET-A-CACHE-STORAGE"));
				  await navigator.serviceWorker.register("/sw.js");
				  await navigator.serviceWorker.ready;
				})().then(() => { document.body.append("SET-DONE"); window.__done = true; },
				          e => { document.body.append("SET-FAILED " + e); window.__done = true; });
				</script>`)
		case "/see":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<!doctype html><h1>SEER</h1><p>server saw cookies: [%s]</p><script src="/cached.js"></script><pre id=o></pre><script>
				(async () => {
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
				  seen.push("controlled: [" + (navigator.serviceWorker.controller ? "SECRET-A-SW-CONTROLS" : "") + "]");
				  document.getElementById("o").textContent = seen.join("\n");
				})().catch(e => document.body.append("SEE-FAILED " + e)).then(() => { document.body.append("SEE-DONE"); window.__done = true; });
				</script>`, strings.ReplaceAll(req.Header.Get("Cookie"), "<", ""))
		case "/cached.js":
			w.Header().Set("Content-Type", "text/javascript")
			w.Header().Set("Cache-Control", "public, max-age=3600")
			fmt.Fprint(w, "window.__cached = 1;")
		case "/sw.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `self.addEventListener("activate", e => e.waitUntil(self.clients.claim()));
				self.addEventListener("fetch", e => { if (new URL(e.request.url).pathname === "/see") e.respondWith(new Response("<p>SECRET-A-SW-RESPONSE</p><script>window.__done = true</script>", {headers: {"Content-Type": "text/html"}})); });`)
		default:
			http.NotFound(w, req)
		}
	})
}

// TestRender_RendersAreIsolated: render A sets cookies, storage, caches and a
// service worker on an allowed origin; render B on the same origin prints
// what it sees, and none of A's state is there. With the old shared-context
// design the same pages do leak, which shows the test can see a leak.
func TestRender_RendersAreIsolated(t *testing.T) {
	for _, tc := range []struct {
		name   string
		design tabDesign
		leaks  bool
	}{
		{"context per render (default)", designContextPerRender, false},
		{"shared context leaks (sanity check of the test)", designSharedContext, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := isolationSite(t)
			r := newRenderer(t, Config{AllowedHosts: allowlist.MustParse(s.hostPort()), Timeout: 20 * time.Second}, func(r *Renderer) { r.design = tc.design })
			wait := settings(spec.Options{WaitFor: "window.__done === true"})
			a := mustRender(t, r, Source{URL: s.URL + "/set"}, wait)
			if text := pdfText(t, a.pdf); !strings.Contains(text, "SET-DONE") {
				t.Fatalf("render A did not set its state:\n%s", text)
			}
			b := mustRender(t, r, Source{URL: s.URL + "/see"}, wait)
			text := pdfText(t, b.pdf)
			t.Logf("render B saw:\n%s", text)
			if tc.leaks {
				if !strings.Contains(text, "SECRET-A") {
					t.Errorf("the shared context showed nothing of render A: the test cannot see a leak")
				}
				return
			}
			if !strings.Contains(text, "SEE-DONE") || strings.Contains(text, "SEE-FAILED") {
				t.Fatalf("render B did not finish looking")
			}
			if strings.Contains(text, "SECRET-A") {
				t.Errorf("render B saw state of render A")
			}
			if n := s.count("/cached.js"); n != 2 {
				t.Errorf("/cached.js fetched %d times, want 2 (render B must not use A's HTTP cache)", n)
			}
		})
	}
}
