package render

// The anchor and heading marks of a manual's chapter (Source.MarkAnchors,
// Source.MarkHeadings): empty links added just before the print, whose
// annotations tell the assembly where an element or a heading was printed.

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// markStyle is the inline style (a JavaScript string literal) of an
// anchor or heading mark: an empty one-pixel box positioned absolutely, so that
// the layout does not change and Chromium still prints its link.
const markStyle = "'position:absolute!important;display:block!important;width:1px!important;height:1px!important;margin:0!important;padding:0!important;border:0!important;overflow:hidden!important;'"

// Bounds of the heading marks of one page. A heading's mark carries ids
// while its URL stays within maxHeadingMarkURL characters, far below the
// longest URL Chromium takes; the ids past that get marks of their own.
const (
	maxHeadingText    = 300
	maxHeadingMarks   = 20000
	maxHeadingMarkURL = 64 << 10
)

// marksScript adds the marks; ANCHORS and HEADINGS (booleans) say which.
// It returns {headings, anchors}: "" or why that part failed (the page
// replaced what it calls).
//
// Heading marks: for each heading in document order that is rendered and
// has text, a mark first in the heading, to HeadingMarkPrefix +
// "<n>/<level>?<text>", n its place, level 1–6 from the tag or
// aria-level, text what a reader sees of the heading (aria-hidden and
// unrendered parts left out, white space folded, at most maxHeadingText
// characters), escaped; at most maxHeadingMarks headings. Everything is
// read before the first mark goes in, so that a page that breaks the
// script gets none.
//
// Anchor marks: every element with an id (and every <a name>) gets one, to
// AnchorPrefix plus the escaped id, the first element of an id only; void
// elements (an img, an input) cannot hold one, so theirs goes before them.
//
// With both, a heading's mark carries, after "&", the comma-separated
// escaped ids (within maxHeadingMarkURL) of the heading itself, of the elements in it, and of the
// elements that open with it (each with nothing before the next but white
// space, as a section that starts with its heading), which get no mark of their
// own: each mark is one more positioned box, which every page of the
// print walks, where the ids a heading's mark carries cost nothing. In
// generated API documentation nearly every id is a heading's.
const marksScript = `(() => {
	const failed = {headings: '', anchors: ''};
	const why = (e) => String(e && e.message || e);
	const anchorPrefix = %q, headingPrefix = %q;
	const proto = document.createElement('a');
	proto.setAttribute('aria-hidden', 'true');
	// The style parsed once; each mark is a copy (parsing it per mark
	// would dominate a page of many anchors).
	proto.style.cssText = %s;
	const mark = (href) => {
		const a = proto.cloneNode(false);
		a.href = href;
		return a;
	};
	const idOf = (el) => el.id || el.getAttribute('name');
	// opens: nothing of parent is rendered before its child e but white
	// space (an element might be).
	const opens = (parent, e) => {
		for (const c of parent.childNodes) {
			if (c === e) return true;
			if (c.nodeType === Node.ELEMENT_NODE || (c.nodeType === Node.TEXT_NODE && c.data.trim() !== '')) return false;
		}
		return false;
	};
	const anchored = '[id], a[name]';
	const carried = new Set();
	if (HEADINGS) {
		try {
			// The element each id names, the one its anchor mark would be in.
			const first = new Map();
			if (ANCHORS) {
				for (const el of document.querySelectorAll(anchored)) {
					const id = idOf(el);
					if (id && !first.has(id)) first.set(id, el);
				}
			}
			const text = (el) => {
				let out = '';
				const walk = (n) => {
					for (const c of n.childNodes) {
						if (c.nodeType === Node.TEXT_NODE) { out += c.data; continue; }
						if (c.nodeType !== Node.ELEMENT_NODE || c.getAttribute('aria-hidden') === 'true') continue;
						if (c.checkVisibility && !c.checkVisibility()) continue;
						if (c.tagName === 'IMG') { out += ' ' + (c.getAttribute('alt') || '') + ' '; continue; }
						walk(c);
					}
				};
				walk(el);
				return Array.from(out.replace(/\s+/g, ' ').trim().toWellFormed()).slice(0, %d).join('');
			};
			const marks = [];
			for (const el of document.querySelectorAll('h1, h2, h3, h4, h5, h6, [role=heading]')) {
				if (marks.length >= %d) break;
				if (el.closest('[aria-hidden=true]') || (el.checkVisibility && !el.checkVisibility())) continue;
				let level = /^H[1-6]$/.test(el.tagName) ? +el.tagName[1] : 2;
				const aria = parseInt(el.getAttribute('aria-level'), 10);
				if (aria >= 1 && aria <= 6) level = aria;
				const t = text(el);
				if (!t) continue;
				let href = headingPrefix + marks.length + '/' + level + '?' + encodeURIComponent(t);
				if (ANCHORS) {
					const ids = [];
					let room = %d - href.length;
					const take = (e) => {
						const id = e.matches(anchored) ? idOf(e) : '';
						if (!id || first.get(id) !== e || carried.has(id)) return;
						const enc = encodeURIComponent(id);
						if (enc.length + 1 > room) return; // a mark of its own
						room -= enc.length + 1;
						carried.add(id);
						ids.push(enc);
					};
					for (let e = el; e.parentElement && e !== document.body; e = e.parentElement) {
						take(e);
						if (!opens(e.parentElement, e)) break;
					}
					for (const e of el.querySelectorAll(anchored)) take(e);
					if (ids.length) href += '&' + ids.join(',');
				}
				marks.push([el, href]);
			}
			for (const [el, href] of marks) el.insertBefore(mark(href), el.firstChild);
		} catch (e) {
			failed.headings = why(e);
			carried.clear();
		}
	}
	if (ANCHORS) {
		try {
			if (!document.documentElement.lang) document.documentElement.lang = '` + UndeterminedLang + `';
			const seen = new Set();
			for (const el of document.querySelectorAll(anchored)) {
				const id = idOf(el);
				if (!id || seen.has(id)) continue;
				seen.add(id);
				if (carried.has(id)) continue;
				const a = mark(anchorPrefix + encodeURIComponent(id));
				const voidEl = /^(AREA|BASE|BR|COL|EMBED|HR|IMG|INPUT|LINK|META|SOURCE|TRACK|WBR|svg|SVG)$/.test(el.tagName) || el instanceof SVGElement;
				if (voidEl || !el.parentNode) {
					if (el.parentNode && !(el.parentNode instanceof SVGElement)) el.parentNode.insertBefore(a, el);
				} else {
					el.insertBefore(a, el.firstChild);
				}
			}
		} catch (e) {
			failed.anchors = why(e);
		}
	}
	return failed;
})()`

// marksExprs are marksScript's four forms, by {anchors, headings}.
var marksExprs = func() map[[2]bool]string {
	e := map[[2]bool]string{}
	for _, anchors := range []bool{false, true} {
		for _, headings := range []bool{false, true} {
			e[[2]bool{anchors, headings}] = fmt.Sprintf("(() => { const ANCHORS = %t, HEADINGS = %t; return "+marksScript+"; })()",
				anchors, headings, AnchorPrefix, HeadingMarkPrefix, markStyle, maxHeadingText, maxHeadingMarks, maxHeadingMarkURL)
		}
	}
	return e
}()

// marksFailed says which part of the marks a page broke ("": none).
type marksFailed struct {
	Headings string `json:"headings"`
	Anchors  string `json:"anchors"`
}

// addMarks adds the marks src asks for to the page of t.
func addMarks(ctx context.Context, t *chromedp.Target, anchors, headings bool) (marksFailed, error) {
	res, err := cdp.Call(ctx, t, runtime.Evaluate, runtime.EvaluateParams{Expression: marksExprs[[2]bool{anchors, headings}], ReturnByValue: new(true)})
	if err != nil {
		return marksFailed{}, fmt.Errorf("%w: marking anchors and headings: %v", ErrNavigation, err)
	}
	var failed marksFailed
	switch {
	case res.ExceptionDetails != nil:
		// Outside the parts' own catches: the page broke what the script
		// needs before either part (document.createElement).
		failed.Headings = exceptionText(res.ExceptionDetails)
		failed.Anchors = failed.Headings
	case res.Result == nil || json.Unmarshal(res.Result.Value, &failed) != nil:
		failed.Headings, failed.Anchors = "no result", "no result"
	}
	return failed, nil
}
