package render

// The idle probe: ending the network quiet period once a page provably has
// nothing left to do.
//
// The virtual quiet period (waitQuietVirtual) gives a page under BeginFrame
// control its networkQuiet one frame interval at a time: a budget of
// virtual time and a frame per interval, each a round trip to the browser
// and work in its renderer, on every chapter of a manual. Most documentation pages are done
// long before: their scripts ran at load (a theme switch, a highlighter, an
// observer of the sticky header) and nothing is scheduled. For those the
// period ends at the first step after which the page was idle twice in a
// row, with nothing run in between.
//
// What the page has scheduled is read by a probe that the tab installs
// before any script of the document (Page.addScriptToEvaluateOnNewDocument,
// main frame only): it wraps the ways a page schedules work for later and
// counts what is pending and what ran. A page is idle when it has
//   - no timeout, interval, animation frame or idle callback pending, and
//     no fetch, body read or XMLHttpRequest unsettled;
//   - run no timer, frame, observer callback or settle since the check
//     before;
//   - its load done, every image complete, every script and style sheet
//     element loaded or failed, and its fonts not loading;
//   - no animation or transition (getAnimations), no frame, plugin, media
//     element, lazy image or meta refresh;
//   - never used what the probe cannot follow to its end: a worker, socket,
//     event stream, message channel or postMessage, a timer of source text,
//     IndexedDB, the cache API, asynchronous WebAssembly, createImageBitmap,
//     image decode, FileReader, Blob reads, crypto.subtle, the scheduler,
//     a service worker, locks, permissions, storage or clipboard queries,
//     or view transitions.
// and the tab's own count of requests started and finished is unchanged
// with none in flight. Anything else (a page that never went idle, or one
// without the probe: a document set by content) waits the whole period.
// Steps and frames before the end are the same as without the probe, so what a page renders when it ends is what it
// rendered at that step of the full period: the period only stops where
// the rest of it would have run nothing.
//
// The probe is the page's own to break: a page that replaces or fools it
// only ends its own quiet period early, which it can do anyway by never
// scheduling anything.

import (
	"context"
	"fmt"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// idleProbeSource is the probe each tab runs in the main frame of every new
// document, before the document's own scripts. idleStateExpr reads it.
const idleProbeSource = `(() => {
	const w = window;
	if (w.top !== w) return;
	const key = Symbol.for('pdfexport.idle');
	if (w[key]) return;
	let events = 0, busy = '', settling = 0;
	const timers = new Set(), frames = new Set(), idles = new Set();
	const loaded = new WeakSet();
	const mark = (why) => { if (!busy) busy = why; };
	const counted = (f) => function (...a) { events++; return Reflect.apply(f, this, a); };
	const settle = (p) => {
		settling++;
		const done = () => { settling--; events++; };
		try { Promise.prototype.then.call(p, done, done); } catch { settling--; }
		return p;
	};
	const num = (id) => { try { return Number(id); } catch { return NaN; } };
	const timer = (name, set, once, cancel) => {
		const orig = w[name];
		if (typeof orig !== 'function') return;
		w[name] = {[name](h, ...a) {
			if (typeof h !== 'function') {
				if (name === 'setTimeout' || name === 'setInterval') mark('a timer of source text');
				return Reflect.apply(orig, w, [h, ...a]);
			}
			const id = Reflect.apply(orig, w, [function (...b) { if (once) set.delete(id); events++; return Reflect.apply(h, this, b); }, ...a]);
			set.add(id);
			return id;
		}}[name];
		const c = w[cancel];
		if (typeof c === 'function') w[cancel] = {[cancel](id) { set.delete(num(id)); return Reflect.apply(c, w, [id]); }}[cancel];
	};
	timer('setTimeout', timers, true, 'clearTimeout');
	timer('setInterval', timers, false, 'clearInterval');
	timer('requestAnimationFrame', frames, true, 'cancelAnimationFrame');
	timer('requestIdleCallback', idles, true, 'cancelIdleCallback');
	for (const name of ['IntersectionObserver', 'ResizeObserver', 'PerformanceObserver', 'ReportingObserver']) {
		const O = w[name];
		if (typeof O !== 'function') continue;
		const P = class extends O { constructor(cb, ...a) { super(typeof cb === 'function' ? counted(cb) : cb, ...a); } };
		Object.defineProperty(P, 'name', {value: name});
		w[name] = P;
	}
	for (const name of ['Worker', 'SharedWorker', 'WebSocket', 'EventSource', 'RTCPeerConnection', 'WebTransport',
		'MessageChannel', 'BroadcastChannel', 'FileReader']) {
		const C = w[name];
		if (typeof C !== 'function') continue;
		const P = class extends C { constructor(...a) { mark(name); super(...a); } };
		Object.defineProperty(P, 'name', {value: name});
		w[name] = P;
	}
	const flag = (obj, names, why) => {
		for (const n of names) {
			const f = obj && obj[n];
			if (typeof f !== 'function') continue;
			obj[n] = {[n](...a) { mark(why); return Reflect.apply(f, this, a); }}[n];
		}
	};
	const proto = (name) => w[name] && w[name].prototype;
	flag(w, ['postMessage', 'createImageBitmap'], 'postMessage or createImageBitmap');
	flag(proto('IDBFactory'), ['open', 'deleteDatabase', 'databases'], 'IndexedDB');
	flag(proto('CacheStorage'), ['open', 'match', 'has', 'keys', 'delete'], 'the cache API');
	flag(w.WebAssembly, ['compile', 'instantiate', 'compileStreaming', 'instantiateStreaming'], 'WebAssembly');
	flag(proto('HTMLImageElement'), ['decode'], 'image decode');
	flag(proto('Blob'), ['text', 'arrayBuffer', 'bytes', 'stream'], 'a Blob read');
	flag(proto('SubtleCrypto'), Object.getOwnPropertyNames(proto('SubtleCrypto') || {}).filter((n) => n !== 'constructor'), 'crypto.subtle');
	flag(proto('Scheduler'), ['postTask', 'yield'], 'the scheduler');
	flag(proto('ServiceWorkerContainer'), ['register', 'getRegistration', 'getRegistrations'], 'a service worker');
	flag(proto('LockManager'), ['request', 'query'], 'locks');
	flag(proto('Permissions'), ['query'], 'permissions');
	flag(proto('StorageManager'), ['estimate', 'persist', 'persisted', 'getDirectory'], 'storage');
	flag(proto('Clipboard'), ['read', 'readText', 'write', 'writeText'], 'the clipboard');
	flag(w.Notification, ['requestPermission'], 'notifications');
	flag(w.Atomics, ['waitAsync'], 'Atomics.waitAsync');
	flag(proto('Document'), ['startViewTransition'], 'a view transition');
	const f = w.fetch;
	if (typeof f === 'function') w.fetch = {fetch(...a) { return settle(Reflect.apply(f, this, a)); }}.fetch;
	const body = proto('Response');
	for (const n of ['text', 'json', 'arrayBuffer', 'blob', 'formData', 'bytes']) {
		const m = body && body[n];
		if (typeof m === 'function') body[n] = {[n](...a) { return settle(Reflect.apply(m, this, a)); }}[n];
	}
	const xhr = proto('XMLHttpRequest');
	const send = xhr && xhr.send;
	if (typeof send === 'function') xhr.send = {send(...a) {
		settling++;
		let open = true;
		const done = () => { if (open) { open = false; settling--; events++; } };
		try {
			this.addEventListener('loadend', done);
			return Reflect.apply(send, this, a);
		} catch (e) { done(); throw e; }
	}}.send;
	const seen = (e) => { if (e.target instanceof Element) loaded.add(e.target); };
	document.addEventListener('load', seen, true);
	document.addEventListener('error', seen, true);
	const state = () => {
		if (busy) return 'busy: ' + busy;
		if (timers.size || frames.size || idles.size || settling) return 'pending';
		const d = document;
		if (d.readyState !== 'complete') return 'loading';
		if (d.querySelector('iframe, frame, object, embed, video, audio, [loading=lazy i], meta[http-equiv=refresh i]')) return 'busy: an element';
		for (const img of d.images) if (!img.complete) return 'an image loading';
		for (const el of d.querySelectorAll('script[src], link[rel~=stylesheet i][href]')) if (!loaded.has(el)) return 'a ' + el.localName + ' loading';
		if (d.fonts && d.fonts.status === 'loading') return 'fonts loading';
		if (d.getAnimations().length) return 'animations';
		return 'idle ' + events;
	};
	Object.defineProperty(w, key, {value: state});
})()`

// idleStateExpr reads the probe: "idle <n>" (n counting what ran so far),
// or why the page is not idle.
const idleStateExpr = `(() => { const p = window[Symbol.for('pdfexport.idle')]; return typeof p === 'function' ? String(p()) : 'no probe'; })()`

// installIdleProbe makes the tab run the probe in every new document.
func installIdleProbe(ctx context.Context, t *chromedp.Target) error {
	if _, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: idleProbeSource}); err != nil {
		return fmt.Errorf("%w: preparing the tab (the idle probe): %v", ErrNavigation, err)
	}
	return nil
}

// idleSince tells, step after step of a quiet period, whether the page was
// idle at two checks in a row with nothing run in between.
type idleSince struct {
	last string // the page's state and the tab's request count at the check before, if idle
}

// idle reads the probe and the tab's requests; true when the page was
// idle now and at the check before, with nothing run or requested between.
func (s *idleSince) idle(ctx context.Context, t *chromedp.Target, w *pageWatch) (bool, error) {
	res, err := cdp.Call(ctx, t, runtime.Evaluate, runtime.EvaluateParams{Expression: idleStateExpr, ReturnByValue: new(true)})
	if err != nil {
		return false, fmt.Errorf("%w: reading the idle probe: %v", ErrNavigation, err)
	}
	state := ""
	if res.ExceptionDetails == nil && res.Result != nil {
		state = string(res.Result.Value)
	}
	w.mu.Lock()
	requests, settled, inflight := w.requests, w.settled, len(w.inflight)
	w.mu.Unlock()
	if !strings.HasPrefix(state, `"idle `) || inflight > 0 {
		s.last = ""
		return false, nil
	}
	now := fmt.Sprintf("%s %d %d", state, requests, settled)
	was := s.last
	s.last = now
	return was == now, nil
}
