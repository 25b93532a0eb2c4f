package assemble

import "strconv"

// producer is the Info dictionary's and the XMP metadata's /Producer.
const producer = "pdfexport"

// writeDocument writes what belongs to the whole manual once every part
// is copied: the structure tree (tagged), the page tree, the outline, the
// catalog, the Info dictionary and the cross-reference table. It returns
// the number of outline entries written.
func (m *manual) writeDocument(opts Options) (outlineEntries int, err error) {
	lang, err := m.finishStructure(opts.Lang)
	if err != nil {
		return 0, err
	}
	if err := m.writePageTree(); err != nil {
		return 0, err
	}
	catalog, outlineEntries, err := m.catalog(opts, lang)
	if err != nil {
		return 0, err
	}
	catalogNum := m.w.alloc()
	if err := m.w.object(catalogNum, catalog); err != nil {
		return 0, err
	}
	infoNum, err := writeInfo(m.w, opts.Title)
	if err != nil {
		return 0, err
	}
	return outlineEntries, m.w.finish(catalogNum, infoNum)
}

// finishStructure writes the structure tree of a tagged manual in the
// language given, else the first part's, and returns that language.
func (m *manual) finishStructure(lang string) (string, error) {
	if m.tree == nil {
		return lang, nil
	}
	if lang == "" {
		lang = m.tree.lang
	}
	if lang == "" {
		lang = UndeterminedLang // said, rather than not: PDF/UA asks for one
	}
	return lang, m.writeStructure(lang)
}

// writePageTree writes the manual's one page tree node, which lists every
// page in order.
func (m *manual) writePageTree() error {
	kids := make(array, len(m.pageNums))
	for i, n := range m.pageNums {
		kids[i] = ref{n, 0}
	}
	pages := &dict{}
	pages.set("Type", name("Pages"))
	pages.set("Kids", kids)
	pages.set("Count", number(strconv.Itoa(len(kids))))
	return m.w.object(m.pagesRoot, pages)
}

// catalog makes the document catalog, writing the outline and what the
// conformance claimed needs on the way, and counts the outline entries.
func (m *manual) catalog(opts Options, lang string) (catalog *dict, outlineEntries int, err error) {
	catalog = &dict{}
	catalog.set("Type", name("Catalog"))
	catalog.set("Pages", ref{m.pagesRoot, 0})
	if opts.Outline {
		root, n, err := m.writeOutline()
		if err != nil {
			return nil, 0, err
		}
		if root > 0 {
			catalog.set("Outlines", ref{root, 0})
			catalog.set("PageMode", name("UseOutlines"))
		}
		outlineEntries = n
	}
	if m.tree != nil {
		setTaggedEntries(catalog, m.tree.root, lang)
	}
	if err := writeConformance(m.w, catalog, opts); err != nil {
		return nil, 0, err
	}
	return catalog, outlineEntries, nil
}

// setTaggedEntries sets the catalog entries of a tagged manual: its
// structure tree, its language, and its title shown rather than its file
// name, as PDF/UA asks.
func setTaggedEntries(catalog *dict, structRoot int, lang string) {
	catalog.set("StructTreeRoot", ref{structRoot, 0})
	markInfo := &dict{}
	markInfo.set("Marked", keyword("true"))
	catalog.set("MarkInfo", markInfo)
	if lang != "" {
		catalog.set("Lang", textString(lang))
	}
	prefs := &dict{}
	prefs.set("DisplayDocTitle", keyword("true"))
	catalog.set("ViewerPreferences", prefs)
}

// writeConformance writes the XMP metadata a tagged or claiming manual
// carries and the output intent PDF/A asks for, and sets them in the
// catalog.
func writeConformance(w *writer, catalog *dict, opts Options) error {
	if opts.Tagged || opts.Conformance.Any() {
		meta, err := writeMetadata(w, opts.Title, producer, opts.Conformance)
		if err != nil {
			return err
		}
		catalog.set("Metadata", ref{meta, 0})
	}
	if opts.Conformance.PDFA != "" {
		intent, err := writeOutputIntent(w)
		if err != nil {
			return err
		}
		catalog.set("OutputIntents", array{ref{intent, 0}})
	}
	return nil
}

// writeInfo writes the Info dictionary: the title and the producer.
func writeInfo(w *writer, title string) (int, error) {
	info := &dict{}
	if title != "" {
		info.set("Title", textString(title))
	}
	info.set("Producer", textString(producer))
	num := w.alloc()
	return num, w.object(num, info)
}
