package render

// Sessions: the renders of one session (Source.Session, the chapters of one
// manual export) run one after another in a browser context kept between
// them, each in a new tab made ahead in that context. Chromium starts with
// --renderer-process-limit=1, so a new tab goes into a running renderer
// process of its own browser context when there is one (never into one of
// another context): the tab made ahead keeps the context's process alive
// when the previous tab closes, and the next chapter is laid out by a
// renderer whose V8, Blink memory cache, code cache and fonts are warm,
// where a fresh context starts a renderer process cold for every chapter,
// a large share of a short chapter's CPU.
//
// A new tab per render keeps what is the tab's own fresh: its page (and
// with it the page's virtual clock, which once stopped stays stopped for
// the tab's later documents), sessionStorage, history and window.name.
// What the context keeps is reset between renders: its cookies, and the
// storage (local storage, IndexedDB, Cache Storage, service workers, file
// systems) of every origin a document of the last render came from. The HTTP
// cache stays: that is one caller's manual reading its own stylesheets and
// scripts again, as a reader's browser would.

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/chromedp"
)

// Session bounds.
const (
	// sessionIdle is how long a session's context waits for its next
	// render: the chapters of a manual come back to back.
	sessionIdle = 5 * time.Second
	// sessionMaxRenders bounds the renders of one context, so that no
	// renderer process grows for a whole catalogue.
	sessionMaxRenders = 64
	// sessionMaxOrigins bounds the origins a render's documents may come
	// from for its context to be reset and kept; a render past it ends its
	// context.
	sessionMaxOrigins = 32
)

// sessionContext is a browser context of one session with the next
// render's tab made ahead in it.
type sessionContext struct {
	key     string
	b       *browser
	id      cdp.BrowserContextID
	renders int
	// next is the tab made ahead (nil if making it failed); ready is
	// closed once next is set.
	next  *spareTab
	ready chan struct{}
	idle  *time.Timer // while parked: ends it when no render takes it
}

// takeSession returns an idle context of session key on b, its tab made
// ahead taken as the render's, or nil. A context of another browser, or
// whose tab is gone, is discarded.
func (r *Renderer) takeSession(b *browser, key string) (*sessionContext, *spareTab) {
	r.sessMu.Lock()
	var found *sessionContext
	var stale []*sessionContext
	kept := r.sessions[:0]
	for _, sc := range r.sessions {
		switch {
		case sc.b != b || b.retired.Load() || sc.next == nil || sc.next.ctx.Err() != nil || sc.next.stale():
			if sc.idle.Stop() {
				stale = append(stale, sc)
			}
		case found == nil && sc.key == key && sc.idle.Stop():
			found = sc
		default:
			kept = append(kept, sc)
		}
	}
	clear(r.sessions[len(kept):])
	r.sessions = kept
	r.sessMu.Unlock()
	for _, sc := range stale {
		r.endSession(sc)
	}
	if found == nil {
		return nil, nil
	}
	tab := found.next
	found.next = nil
	// The render's own reference (acquire) keeps the browser now.
	r.dropRef(found.b)
	r.parked.Done()
	return found, tab
}

// prepareNext makes the next render's tab in sc's context while the
// current render runs, so that it shares that render's renderer process.
func (r *Renderer) prepareNext(sc *sessionContext) {
	sc.ready = make(chan struct{})
	r.prep.Go(func() {
		defer close(sc.ready)
		tab, err := r.makeTab(sc.b, sc.id)
		if err != nil {
			if !sc.b.dead() {
				r.log.Debug("making a session's next tab failed", "err", err)
			}
			return
		}
		sc.next = tab
	})
}

// keepSession resets sc after a render whose documents came from origins
// and parks it for the session's next render; a context that cannot be
// kept (its next tab failed, too many renders or origins, a closing
// Renderer) ends.
func (r *Renderer) keepSession(sc *sessionContext, origins, frameKeys []string, overflow bool) {
	<-sc.ready
	sc.renders++
	keep := sc.next != nil && !overflow && sc.renders < sessionMaxRenders && !sc.b.dead() && !sc.b.retired.Load()
	if keep {
		if err := r.resetSession(sc, origins, frameKeys); err != nil {
			r.log.Debug("resetting a session's context failed; ending it", "err", err)
			keep = false
		}
	}
	r.sessMu.Lock()
	if r.closing.Err() != nil {
		keep = false
	}
	var evicted *sessionContext
	if keep {
		if len(r.sessions) >= max(cap(r.sem), 1) && r.sessions[0].idle.Stop() {
			evicted = r.sessions[0]
			r.sessions = r.sessions[1:]
		}
		sc.b.refs.Add(1) // dropped when taken or ended
		r.parked.Add(1)  // done when taken or ended
		idle := sessionIdle
		if r.hooks.sessionIdle > 0 {
			idle = r.hooks.sessionIdle
		}
		sc.idle = time.AfterFunc(idle, func() { r.expireSession(sc) })
		r.sessions = append(r.sessions, sc)
	}
	r.sessMu.Unlock()
	if evicted != nil {
		r.endSession(evicted)
	}
	if !keep {
		r.discardSessionContext(sc)
	}
}

// resetSession clears what the last render may have left in sc's context:
// its cookies, the storage of origins (first-party) and that of frameKeys
// (a third-party frame's storage is partitioned by the top-level site, and
// only Chromium can name that key). The calls go through the tab made
// ahead (the Storage domain needs a page's session).
func (r *Renderer) resetSession(sc *sessionContext, origins, frameKeys []string) error {
	ctx, cancel := context.WithTimeout(sc.b.ctx, contextOpTimeout)
	defer cancel()
	if _, err := cdp.Call(ctx, sc.b.session(), storage.ClearCookies, storage.ClearCookiesParams{BrowserContextID: sc.id}); err != nil {
		return fmt.Errorf("clearing cookies: %w", err)
	}
	t := chromedp.FromContext(sc.next.ctx).Target
	for _, o := range origins {
		if _, err := cdp.Call(ctx, t, storage.ClearDataForOrigin, storage.ClearDataForOriginParams{Origin: o, StorageTypes: sessionStorageTypes}); err != nil {
			return fmt.Errorf("clearing the storage of %s: %w", o, err)
		}
	}
	for _, k := range frameKeys {
		if !strings.Contains(k, "^") {
			continue // first-party: its origin's, cleared above
		}
		if _, err := cdp.Call(ctx, t, storage.ClearDataForStorageKey, storage.ClearDataForStorageKeyParams{StorageKey: k, StorageTypes: sessionStorageTypes}); err != nil {
			return fmt.Errorf("clearing the storage of %s: %w", k, err)
		}
	}
	return nil
}

// sessionStorageTypes are the kinds of an origin's storage cleared between
// the renders of a session (cookies are cleared for the whole context).
const sessionStorageTypes = "local_storage,indexeddb,cache_storage,service_workers,file_systems,websql,shared_storage,storage_buckets"

// expireSession ends a parked context no render took in time.
func (r *Renderer) expireSession(sc *sessionContext) {
	r.sessMu.Lock()
	for i, s := range r.sessions {
		if s == sc {
			r.sessions = append(r.sessions[:i], r.sessions[i+1:]...)
			break
		}
	}
	r.sessMu.Unlock()
	r.endSession(sc)
}

// endSession ends a parked context: its tab made ahead, the context and
// the reference it held.
func (r *Renderer) endSession(sc *sessionContext) {
	r.discardSessionContext(sc)
	r.dropRef(sc.b)
	r.parked.Done()
}

// discardSessionContext closes sc's tab made ahead, once made, and
// disposes of its context (the render's own tab closed already).
func (r *Renderer) discardSessionContext(sc *sessionContext) {
	if sc.ready != nil {
		<-sc.ready
	}
	if sc.next != nil {
		if t := chromedp.FromContext(sc.next.ctx).Target; t != nil {
			closeTarget(sc.b, t.TargetID)
		}
		sc.next.close()
		sc.next = nil
	}
	r.disposeBrowserContext(sc.b, sc.id)
}

// dropSessions ends every parked context (Close).
func (r *Renderer) dropSessions() {
	r.sessMu.Lock()
	var ended []*sessionContext
	for _, sc := range r.sessions {
		if sc.idle.Stop() {
			ended = append(ended, sc)
		}
	}
	r.sessions = nil
	r.sessMu.Unlock()
	for _, sc := range ended {
		r.endSession(sc)
	}
	r.parked.Wait() // the contexts whose idle timer fired meanwhile
}

// originOf is the origin of a document URL whose storage a reset clears
// ("" for a URL without one: about:, data:, blob: inherit or are opaque).
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// frameStorageKeys are the storage keys of the frames of the tab t now
// (a third-party frame's storage is partitioned by the top-level site, so
// its origin alone does not name it).
func frameStorageKeys(b *browser, t *chromedp.Target) []string {
	ctx, cancel := context.WithTimeout(b.ctx, contextOpTimeout)
	defer cancel()
	tree, err := cdp.Call(ctx, t, page.GetFrameTree, cdp.Empty{})
	if err != nil || tree.FrameTree == nil {
		return nil
	}
	var keys []string
	var walk func(ft *page.FrameTree)
	walk = func(ft *page.FrameTree) {
		if ft.Frame != nil && len(keys) < sessionMaxOrigins {
			if res, err := cdp.Call(ctx, t, storage.GetStorageKey, storage.GetStorageKeyParams{FrameID: ft.Frame.ID}); err == nil && res.StorageKey != "" {
				keys = append(keys, string(res.StorageKey))
			}
		}
		for _, c := range ft.ChildFrames {
			walk(c)
		}
	}
	walk(tree.FrameTree)
	return keys
}
