package assemble

import (
	"fmt"
	"strconv"
)

// Finding is something an accessible document needs that a part lacks:
// what its source did not say, which no assembly can make up.
type Finding struct {
	Part int // the part's index in Assemble's parts
	// Page is the page (1-based, within the part) of the element; 0 when
	// not known.
	Page int
	// Element is the structure element's type (Figure, H3), "" for the
	// part itself.
	Element string
	What    string
}

func (f Finding) String() string {
	s := f.What
	if f.Element != "" {
		s = f.Element + ": " + s
	}
	if f.Page > 0 {
		s += " (page " + strconv.Itoa(f.Page) + " of the part)"
	}
	return s
}

// maxFindingsPerPart and maxAuditElements bound what one part's audit
// reports and reads.
const (
	maxFindingsPerPart = 20
	maxAuditElements   = 1 << 20
)

// auditPart walks part i's structure tree in reading order for what
// PDF/UA asks of the source: a language, alternative text on figures,
// headings that skip no level.
func auditPart(r *reader, i int, pages []pageRef) ([]Finding, error) {
	root, err := r.dict(r.trailer.get("Root"))
	if err != nil || root == nil {
		return nil, fmt.Errorf("%w: no catalog", ErrMalformed)
	}
	sr, err := r.dict(root.get("StructTreeRoot"))
	if err != nil {
		return nil, err
	}
	if sr == nil {
		return []Finding{{Part: i, What: "not tagged: it has no structure tree"}}, nil
	}
	pageIndex := make(map[int]int, len(pages))
	for j, p := range pages {
		pageIndex[p.num] = j
	}
	a := &auditor{r: r, part: i, pageIndex: pageIndex, seen: map[int]bool{}}
	a.hasLang = knownLang(root.get("Lang"))
	if err := a.walk(sr.get("K"), 0, 0); err != nil {
		return nil, err
	}
	if !a.hasLang {
		a.add(Finding{Part: i, What: "no language: the page's html element has no lang attribute"})
	}
	return a.found, nil
}

// UndeterminedLang is the language the renderer gives a chapter without
// one (render.UndeterminedLang): Chromium would write its own locale.
const UndeterminedLang = "und"

// knownLang reports whether v is a language that is not undetermined.
func knownLang(v value) bool {
	l, ok := v.(str)
	return ok && l.text() != "" && l.text() != UndeterminedLang
}

type auditor struct {
	r         *reader
	part      int
	pageIndex map[int]int
	seen      map[int]bool
	hasLang   bool
	level     int // the last heading's level, 0 before the first
	found     []Finding
}

func (a *auditor) add(f Finding) {
	if len(a.found) < maxFindingsPerPart {
		a.found = append(a.found, f)
	}
}

func (a *auditor) walk(v value, page, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: structure tree deeper than %d", ErrMalformed, maxDepth)
	}
	if rf, ok := v.(ref); ok {
		if a.seen[rf.num] {
			return nil
		}
		a.seen[rf.num] = true
		if len(a.seen) > maxAuditElements {
			return fmt.Errorf("%w: more than %d structure elements", ErrMalformed, maxAuditElements)
		}
	}
	v, err := a.r.resolve(v)
	if err != nil {
		return err
	}
	switch v := v.(type) {
	case array:
		for _, k := range v {
			if err := a.walk(k, page, depth+1); err != nil {
				return err
			}
		}
	case *dict:
		s, ok := v.get("S").(name)
		if !ok {
			return nil // a marked-content or object reference
		}
		if pg, ok := v.get("Pg").(ref); ok {
			if j, ok := a.pageIndex[pg.num]; ok {
				page = j + 1
			}
		}
		if s == "Document" && knownLang(v.get("Lang")) {
			a.hasLang = true
		}
		a.element(string(s), v, page)
		return a.walk(v.get("K"), page, depth+1)
	}
	return nil
}

func (a *auditor) element(s string, d *dict, page int) {
	switch {
	case s == "Figure":
		if d.get("Alt") == nil && d.get("ActualText") == nil {
			a.add(Finding{Part: a.part, Page: page, Element: s, What: "an image without alternative text (no alt attribute)"})
		}
	case len(s) == 2 && s[0] == 'H' && s[1] >= '1' && s[1] <= '6':
		level := int(s[1] - '0')
		if level > a.level+1 {
			prev := "the start of the part"
			if a.level > 0 {
				prev = "H" + strconv.Itoa(a.level)
			}
			a.add(Finding{Part: a.part, Page: page, Element: s, What: "a heading level skipped: " + s + " after " + prev})
		}
		a.level = level
	}
}
