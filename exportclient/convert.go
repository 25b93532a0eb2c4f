package exportclient

import (
	"errors"

	"github.com/pdfexport/pdfexport/internal/queue/fleet"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// Conversions between the public types (types.go) and the worker's
// (internal/spec), at the package boundary. Types whose fields are all of
// basic types convert directly (their underlying types are identical);
// the rest field by field. types_test.go fills every field of every type
// and checks both directions against the JSON of the other side, so a
// field added to one side and forgotten here fails it.

func (p Payload) spec() spec.Request {
	return spec.Request{V: p.V, ManualID: p.ManualID, Version: p.Version,
		Source: spec.RequestSource{URL: p.Source.URL, HTML: p.Source.HTML, Chapters: chaptersSpec(p.Source.Chapters),
			Site: (*spec.Site)(p.Source.Site), Credentials: p.Source.Credentials.spec()},
		Options: p.Options.spec(), Force: p.Force, RequestID: p.RequestID, Callback: (*spec.Callback)(p.Callback)}
}

func publicPayload(r spec.Request) Payload {
	return Payload{V: r.V, ManualID: r.ManualID, Version: r.Version,
		Source: PayloadSource{URL: r.Source.URL, HTML: r.Source.HTML, Chapters: publicChapters(r.Source.Chapters),
			Site: (*Site)(r.Source.Site), Credentials: publicCredentials(r.Source.Credentials)},
		Options: publicOptions(r.Options), Force: r.Force, RequestID: r.RequestID, Callback: (*Callback)(r.Callback)}
}

func chaptersSpec(cs []Chapter) []spec.Chapter {
	if cs == nil {
		return nil
	}
	out := make([]spec.Chapter, len(cs))
	for i, c := range cs {
		out[i] = spec.Chapter(c)
	}
	return out
}

func publicChapters(cs []spec.Chapter) []Chapter {
	if cs == nil {
		return nil
	}
	out := make([]Chapter, len(cs))
	for i, c := range cs {
		out[i] = Chapter(c)
	}
	return out
}

func (c Credentials) spec() spec.Credentials {
	out := spec.Credentials{Headers: c.Headers}
	if c.Cookies != nil {
		out.Cookies = make([]spec.Cookie, len(c.Cookies))
		for i, ck := range c.Cookies {
			out.Cookies[i] = spec.Cookie(ck)
		}
	}
	return out
}

func publicCredentials(c spec.Credentials) Credentials {
	out := Credentials{Headers: c.Headers}
	if c.Cookies != nil {
		out.Cookies = make([]Cookie, len(c.Cookies))
		for i, ck := range c.Cookies {
			out.Cookies[i] = Cookie(ck)
		}
	}
	return out
}

func (o Options) spec() spec.Options {
	return spec.Options{Paper: o.Paper, Landscape: o.Landscape, MarginMM: (*spec.Margins)(o.MarginMM),
		PrintBackground: o.PrintBackground, Scale: o.Scale, HeaderHTML: o.HeaderHTML, FooterHTML: o.FooterHTML,
		Outline: o.Outline, Tagged: o.Tagged, WaitFor: o.WaitFor, Media: o.Media, PageRanges: o.PageRanges,
		PreferCSSPageSize: o.PreferCSSPageSize, FailOnResourceErrors: o.FailOnResourceErrors,
		FailOnConsoleErrors: o.FailOnConsoleErrors, Metadata: (*spec.Metadata)(o.Metadata),
		Watermark: (*spec.Watermark)(o.Watermark), Encryption: (*spec.Encryption)(o.Encryption),
		TOC: o.TOC, FastWebView: o.FastWebView, Lang: o.Lang, PDFUA: o.PDFUA, PDFA: o.PDFA,
		Screenshot: (*spec.Screenshot)(o.Screenshot),
		Page:       o.Page.spec()}
}

func publicOptions(o spec.Options) Options {
	return Options{Paper: o.Paper, Landscape: o.Landscape, MarginMM: (*Margins)(o.MarginMM),
		PrintBackground: o.PrintBackground, Scale: o.Scale, HeaderHTML: o.HeaderHTML, FooterHTML: o.FooterHTML,
		Outline: o.Outline, Tagged: o.Tagged, WaitFor: o.WaitFor, Media: o.Media, PageRanges: o.PageRanges,
		PreferCSSPageSize: o.PreferCSSPageSize, FailOnResourceErrors: o.FailOnResourceErrors,
		FailOnConsoleErrors: o.FailOnConsoleErrors, Metadata: (*Metadata)(o.Metadata),
		Watermark: (*Watermark)(o.Watermark), Encryption: (*Encryption)(o.Encryption),
		TOC: o.TOC, FastWebView: o.FastWebView, Lang: o.Lang, PDFUA: o.PDFUA, PDFA: o.PDFA,
		Screenshot: (*Screenshot)(o.Screenshot),
		Page:       publicPage(o.Page)}
}

func (r Result) spec() spec.Result {
	out := spec.Result{ArtifactKey: r.ArtifactKey, URL: r.URL, ETag: r.ETag, Bytes: r.Bytes, Pages: r.Pages,
		Rendered: r.Rendered, FailOpen: r.FailOpen, RenderMS: r.RenderMS, WaitedMS: r.WaitedMS,
		DownloadURL: r.DownloadURL, WarningsOmitted: r.WarningsOmitted, Chapters: (*spec.ChapterCounts)(r.Chapters), Site: (*spec.SiteDiscovery)(r.Site)}
	if r.Warnings != nil {
		out.Warnings = make([]spec.Warning, len(r.Warnings))
		for i, w := range r.Warnings {
			out.Warnings[i] = spec.Warning(w)
		}
	}
	return out
}

func publicResult(r spec.Result) Result {
	out := Result{ArtifactKey: r.ArtifactKey, URL: r.URL, ETag: r.ETag, Bytes: r.Bytes, Pages: r.Pages,
		Rendered: r.Rendered, FailOpen: r.FailOpen, RenderMS: r.RenderMS, WaitedMS: r.WaitedMS,
		DownloadURL: r.DownloadURL, WarningsOmitted: r.WarningsOmitted, Chapters: (*ChapterCounts)(r.Chapters), Site: (*SiteDiscovery)(r.Site)}
	if r.Warnings != nil {
		out.Warnings = make([]Warning, len(r.Warnings))
		for i, w := range r.Warnings {
			out.Warnings[i] = Warning(w)
		}
	}
	return out
}

func publicResultPtr(r *spec.Result) *Result {
	if r == nil {
		return nil
	}
	out := publicResult(*r)
	return &out
}

func publicFinal(f spec.Final) Final {
	return Final{TaskID: f.TaskID, State: f.State, ManualID: f.ManualID, Version: f.Version,
		RequestID: f.RequestID, Result: publicResultPtr(f.Result), Error: f.Error, Kind: f.Kind,
		Detail: (*FailureDetail)(f.Detail), Retried: f.Retried}
}

func (f Final) spec() spec.Final {
	out := spec.Final{TaskID: f.TaskID, State: f.State, ManualID: f.ManualID, Version: f.Version,
		RequestID: f.RequestID, Error: f.Error, Kind: f.Kind, Detail: (*spec.FailureDetail)(f.Detail), Retried: f.Retried}
	if f.Result != nil {
		r := f.Result.spec()
		out.Result = &r
	}
	return out
}

func publicOlderWorkers(ws []fleet.Worker) []OlderWorker {
	out := make([]OlderWorker, len(ws))
	for i, w := range ws {
		out[i] = OlderWorker(w)
	}
	return out
}

// publicErr is err with each *spec.FieldError in it, joined or wrapped,
// replaced by the *FieldError callers match with errors.As; the rest of
// its message and what it matches stay.
func publicErr(err error) error {
	if err == nil {
		return nil
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs := joined.Unwrap()
		out := make([]error, len(errs))
		for i, e := range errs {
			out[i] = publicErr(e)
		}
		return errors.Join(out...)
	}
	var fe *spec.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	pub := &FieldError{Field: fe.Field, Rule: fe.Rule, envelopeOnly: errors.Is(err, spec.ErrEnvelopeOnly)}
	if err.Error() == fe.Error() {
		return pub
	}
	return &wrappedFieldError{err: err, field: pub}
}

// wrappedFieldError is an error that wraps a *spec.FieldError in more
// context: its message, with the public *FieldError to match.
type wrappedFieldError struct {
	err   error
	field *FieldError
}

func (e *wrappedFieldError) Error() string   { return e.err.Error() }
func (e *wrappedFieldError) Unwrap() []error { return []error{e.field, e.err} }
