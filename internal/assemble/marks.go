package assemble

import (
	"net/url"
	"strconv"
	"strings"
)

// AnchorPrefix starts the URL of an anchor mark; .invalid is a name that
// never resolves (RFC 6761), so a mark can never be a real link.
const AnchorPrefix = "https://anchor.pdfexport.invalid/"

// HeadingMarkPrefix starts the URL of a heading mark: an anchor mark
// whose escaped id starts with NUL (no element's id can), then
// "h/<n>/<level>?<text>", and "&<id>,<id>…" for the anchors the mark
// carries (each part escaped). The form without "?",
// "h/<n>/<level>/<text>" escaped whole, is read too: chapter files
// printed by an older renderer carry it. A chapter printed without
// Chromium's outline carries one per heading; its outline is built from
// them (outlineOfHeadings), and they are dropped with the anchor marks.
const HeadingMarkPrefix = AnchorPrefix + "%00h/"

func (a *analyzed) setMark(n int) {
	if w := n / 64; w >= len(a.marks) {
		a.marks = append(a.marks, make([]uint64, w+1-len(a.marks))...)
	}
	a.marks[n/64] |= 1 << (n % 64)
}

func (a *analyzed) isMark(n int) bool {
	return n/64 < len(a.marks) && a.marks[n/64]&(1<<(n%64)) != 0
}

// headingMark is a heading mark read from a page: its place in the
// document, its level and text, the ids of the anchors it carries, and
// where it was printed.
type headingMark struct {
	n, level int
	title    string
	anchors  []string
	dest     target
}

// maxHeadingTitle bounds the title an outline entry takes from a heading
// mark, in characters: the renderer's bound.
const maxHeadingTitle = 300

// headingOf parses the URI of a heading mark (HeadingMarkPrefix), its
// escapes kept: the parts are unescaped one by one, since a text or an id
// may hold any character.
func headingOf(uri string) (headingMark, bool) {
	rest, ok := strings.CutPrefix(uri, HeadingMarkPrefix)
	if !ok {
		return headingMark{}, false
	}
	var h headingMark
	var place, title string
	if p, query, ok := strings.Cut(rest, "?"); ok {
		text, ids, _ := strings.Cut(query, "&")
		var err error
		if title, err = url.PathUnescape(text); err != nil {
			return headingMark{}, false
		}
		for e := range strings.SplitSeq(ids, ",") {
			if id, err := url.PathUnescape(e); err == nil && id != "" {
				h.anchors = append(h.anchors, id)
			}
		}
		place = p
	} else {
		// The older form: "<n>/<level>/<text>", unescaped whole.
		whole, err := url.PathUnescape(rest)
		if err != nil {
			return headingMark{}, false
		}
		var found bool
		if place, title, found = splitPlace(whole); !found {
			return headingMark{}, false
		}
	}
	ns, ls, ok := strings.Cut(place, "/")
	if !ok {
		return headingMark{}, false
	}
	var err1, err2 error
	h.n, err1 = strconv.Atoi(ns)
	h.level, err2 = strconv.Atoi(ls)
	if err1 != nil || err2 != nil || h.n < 0 || h.level < 1 || h.level > 6 || title == "" {
		return headingMark{}, false
	}
	if r := []rune(title); len(r) > maxHeadingTitle { // the renderer's bound; a page's own mark may pass it
		title = string(r[:maxHeadingTitle])
	}
	h.title = title
	return h, true
}

// splitPlace splits "<n>/<level>/<text>" into "<n>/<level>" and the text,
// which may hold slashes.
func splitPlace(s string) (place, text string, ok bool) {
	parts := strings.SplitN(s, "/", 3)
	if len(parts) != 3 {
		return "", "", false
	}
	return parts[0] + "/" + parts[1], parts[2], true
}

// anchorOf reports the element id an anchor mark names, and the mark's
// URI.
func anchorOf(r *reader, an *dict) (id, uri string, ok bool) {
	uri, ok = linkURI(r, an)
	if !ok || !strings.HasPrefix(uri, AnchorPrefix) {
		return "", "", false
	}
	id, err := url.PathUnescape(strings.TrimPrefix(uri, AnchorPrefix))
	return id, uri, err == nil
}

// anchor records where the element id was printed, unless an earlier
// mark of the part said so.
func (a *analyzed) anchor(id string, t target) {
	if _, seen := a.anchors[id]; !seen {
		a.anchors[id] = t
	}
}

func rectTarget(page int, an *dict) target {
	t := target{page: page, left: "0", top: "null"}
	if rect, ok := an.get("Rect").(array); ok && len(rect) == 4 {
		x1, _ := rect[0].(number)
		y1, _ := rect[1].(number)
		y2, _ := rect[3].(number)
		if x1 != "" {
			t.left = x1
		}
		top := y2
		if y1.float() > y2.float() {
			top = y1
		}
		if top != "" {
			t.top = top
		}
	}
	return t
}

// readMarks reads the anchor and heading marks on the part's pages: it
// records where each anchor was printed and which objects are marks, and
// returns the heading marks (at most maxOutlineEntries), which make the
// part's outline if Chromium printed none.
func (a *analyzed) readMarks(r *reader) ([]headingMark, error) {
	var headings []headingMark
	for i, p := range a.pages {
		page, err := r.dict(ref{p.num, 0})
		if err != nil {
			return nil, err
		}
		annots, err := r.array(page.get("Annots"))
		if err != nil {
			return nil, err
		}
		for _, av := range annots {
			an, err := r.dict(av)
			if err != nil {
				return nil, err
			}
			id, uri, ok := anchorOf(r, an)
			if !ok {
				continue
			}
			if rf, ok := av.(ref); ok {
				a.setMark(rf.num)
			}
			h, isHeading := headingOf(uri)
			if !isHeading {
				a.anchor(id, rectTarget(i, an))
				continue
			}
			for _, id := range h.anchors {
				a.anchor(id, rectTarget(i, an))
			}
			if len(headings) < maxOutlineEntries {
				h.dest = rectTarget(i, an)
				headings = append(headings, h)
			}
		}
	}
	return headings, nil
}
