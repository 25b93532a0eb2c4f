package export

import (
	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// The one conversion from a task's payload to what a render takes: every
// print of a payload (a page, a chapter of a manual's task or of a
// pdf:chapter task, a manual's assembly) goes through chapterJob and
// job.print.

// chapterJob is chapter i of manual printed on its own for the manual's
// task manualTask ("" without a task): the chapter's envelope
// (spec.Envelope.ChapterEnvelope, its key spec.Envelope.ChapterKey),
// printed with its anchor marks, in the manual's render session.
func chapterJob(manual spec.Envelope, i int, manualTask string) job {
	return job{Envelope: manual.ChapterEnvelope(i), markAnchors: true, session: chapterSession(manualTask)}
}

// chapterSession is the render session of the chapters of the manual
// task manualTask ("" without a task: a context per chapter): one caller's
// one export, whose chapters may share a browser context.
func chapterSession(manualTask string) string {
	if manualTask == "" {
		return ""
	}
	return "manual:" + manualTask
}

// print is what the renderer prints of p: its source and its settings.
func (p job) print() (render.Source, spec.PrintSettings) {
	settings := p.Options.Settings()
	if p.manual != nil {
		// An assembled manual is tagged only when asked (its chapters
		// are tagged for the outline too): the document options' check
		// must not look for tags it never had.
		settings.Tagged = settings.Structure
	}
	src := render.Source{URL: p.Source.URL, HTML: p.Source.HTML, Auth: p.auth, MarkAnchors: p.markAnchors, Session: p.session}
	if p.markAnchors && spec.ChapterHeadingMarks(p.Options) {
		// A chapter of an untagged manual: its outline comes from its
		// heading marks (spec.ChapterHeadingMarks), so Chromium prints
		// it untagged (settings.Tagged was set for its outline alone).
		settings.Outline, settings.Tagged, src.MarkHeadings = false, false, true
	}
	return src, settings
}
