package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/render/sourceauth"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// waitFlag is --wait (wait up to the default) or --wait=DUR.
type waitFlag struct {
	set bool
	d   time.Duration
}

const defaultWait = 10 * time.Minute

func (w *waitFlag) IsBoolFlag() bool { return true }
func (w *waitFlag) String() string {
	if !w.set {
		return ""
	}
	return w.d.String()
}
func (w *waitFlag) Set(s string) error {
	switch s {
	case "true":
		w.set, w.d = true, defaultWait
	case "false":
		w.set = false
	default:
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return fmt.Errorf("must be a positive duration like 90s or 5m")
		}
		w.set, w.d = true, d
	}
	return nil
}

// exportFlags are the flags of enqueue export: the request they fill and
// the files and values the request is made from.
type exportFlags struct {
	req                    exportclient.Request
	htmlFile, queue        string
	chaptersFile           string
	site                   exportclient.Site
	siteInclude            stringList
	siteExclude            stringList
	headerFile, footerFile string
	marginMM, scale        string
	noBackground, jsonOut  bool
	wait                   waitFlag
	srcHeaders, srcCookies stringList
	doc                    docFlags
	envelopeVersion        int
}

func runExport(ctx context.Context, e env, args []string) int {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	var f exportFlags
	f.registerSource(fs)
	f.registerPrint(fs)
	f.registerTask(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitInvalid
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(e.stderr, "enqueue export: unexpected argument %q\n", fs.Arg(0))
		return exitInvalid
	}
	if code := f.fillRequest(e); code != exitOK {
		return code
	}
	client, _, code := newClient(e)
	if client == nil {
		return code
	}
	defer client.Close()
	return f.enqueue(ctx, e, client)
}

// registerSource registers the flags that say what to print and the
// credentials its requests carry.
func (f *exportFlags) registerSource(fs *flag.FlagSet) {
	fs.StringVar(&f.req.ManualID, "manual", "", "manual id (required), e.g. ops-guide")
	fs.StringVar(&f.req.Version, "version", "", "manual version (required), e.g. 2026.11.3")
	fs.StringVar(&f.req.URL, "url", "", "http(s) URL of the printable page (host must be on ALLOWED_HOSTS)")
	fs.StringVar(&f.htmlFile, "html-file", "", "print this HTML file instead of a URL (- for stdin, at most 2 MiB)")
	fs.StringVar(&f.chaptersFile, "chapters", "", `export a whole manual: this file lists its chapters in order, one "URL [rev=REVISION] [title]" a line (- for stdin)`)
	fs.StringVar(&f.site.URL, "site", "", "export a whole manual straight from a docs site: the chapters, in order, from this start page's navigation (Sphinx, MkDocs, Docusaurus, Antora, a navigation landmark), each reprinted only when its content changed; --manual defaults to the site's host, --version to latest")
	fs.StringVar(&f.site.Nav, "site-nav", "", "with --site: where its navigation is: sphinx, mkdocs, docusaurus, antora, sitemap, or a CSS selector of its links (default: told from the page)")
	fs.Var(&f.siteInclude, "site-include", "with --site: only chapters whose path matches this glob (* within a segment, ** across; repeatable)")
	fs.Var(&f.siteExclude, "site-exclude", "with --site: no chapter whose path matches this glob (repeatable)")
	fs.IntVar(&f.site.MaxChapters, "site-max-chapters", 0, "with --site: keep the first N chapters (default all, at most 1000)")
	fs.StringVar(&f.site.Revision, "site-revision", "", "with --site: every chapter's revision (the site build's commit), instead of one derived from each page's content")
	fs.Var(&f.srcHeaders, "source-header", `"Name: value" sent with every request to --url's host and port (repeatable); value may be env:VAR or file:PATH, which keeps it out of the process list`)
	fs.Var(&f.srcCookies, "source-cookie", `"name=value" or "name=value; path=/p" sent to --url's host and port (repeatable); value may be env:VAR or file:PATH`)
}

// registerPrint registers the flags of the print options.
func (f *exportFlags) registerPrint(fs *flag.FlagSet) {
	fs.BoolVar(&f.req.Options.TOC, "toc", false, "with --chapters or --site: a table of contents with the final page numbers before the first chapter")
	fs.BoolVar(&f.req.Options.FastWebView, "fast-web-view", false, "linearize the PDF (qpdf --linearize) so a viewer shows page 1 before the whole file arrived")
	fs.StringVar(&f.req.Options.Paper, "paper", "", "paper: A4 (default), Letter, Legal, A3, A5")
	fs.BoolVar(&f.req.Options.Landscape, "landscape", false, "landscape orientation")
	fs.StringVar(&f.marginMM, "margin-mm", "", "all four margins in mm (default 10)")
	fs.StringVar(&f.scale, "scale", "", "rendering scale 0.1–2 (default 1)")
	fs.BoolVar(&f.noBackground, "no-background", false, "do not print background colours and images")
	fs.StringVar(&f.headerFile, "header-html-file", "", "HTML header template (classes pageNumber, totalPages, title, date)")
	fs.StringVar(&f.footerFile, "footer-html-file", "", "HTML footer template")
	fs.BoolVar(&f.req.Options.Outline, "outline", false, "embed a document outline (bookmarks); implies --tagged")
	fs.BoolVar(&f.req.Options.Tagged, "tagged", false, "tagged (accessible) PDF: slower and larger; with --chapters, one structure tree for the manual")
	fs.StringVar(&f.req.Options.Lang, "lang", "", "with --chapters and --tagged or --pdf-ua: the manual's language (BCP 47, e.g. de-CH); default the first chapter's")
	fs.BoolVar(&f.req.Options.PDFUA, "pdf-ua", false, "with --chapters: claim PDF/UA-1 (implies --tagged) and warn about what the chapters lack")
	fs.StringVar(&f.req.Options.PDFA, "pdf-a", "", `with --chapters: claim PDF/A at this level ("2b"); not with encryption`)
	fs.StringVar(&f.req.Options.WaitFor, "wait-for", "", "JavaScript expression that must be true before printing, e.g. window.__PDF_READY__===true")
	fs.StringVar(&f.req.Options.Media, "media", "", "CSS media: print (default) or screen")
	fs.StringVar(&f.req.Options.PageRanges, "page-ranges", "", "pages to print, e.g. 1-5,8")
	fs.BoolVar(&f.req.Options.PreferCSSPageSize, "prefer-css-page-size", false, "let CSS @page size win over --paper")
	fs.BoolVar(&f.req.Options.FailOnResourceErrors, "fail-on-resource-errors", false, "fail, storing nothing, when an image, style sheet or other sub-resource failed, answered >= 400 or was blocked")
	fs.BoolVar(&f.req.Options.FailOnConsoleErrors, "fail-on-console-errors", false, "fail, storing nothing, on an uncaught JavaScript exception or a console.error line")
	f.doc.register(fs)
}

// registerTask registers the flags of the task: its queue, its callback, and
// whether and how to wait for it.
func (f *exportFlags) registerTask(fs *flag.FlagSet) {
	fs.BoolVar(&f.req.Force, "force", false, "re-render even if this artifact is already stored")
	fs.StringVar(&f.req.RequestID, "request-id", "", "correlation id logged by the worker")
	fs.StringVar(&f.req.CallbackURL, "callback", "", "POST the outcome here once the export is final (host on CALLBACK_ALLOWED_HOSTS)")
	fs.StringVar(&f.queue, "queue", "default", "queue: critical, default or batch")
	fs.IntVar(&f.envelopeVersion, "envelope-version", 0, "write the envelope as at least this version (docs/COMPATIBILITY.md), so that no older worker takes it; default: what its fields need")
	fs.Var(&f.wait, "wait", "wait for the result (--wait waits up to 10m, --wait=DUR up to DUR)")
	fs.BoolVar(&f.jsonOut, "json", false, "print JSON (the result document with --wait)")
}

// fillRequest completes the request from the flags that name files or need
// parsing; a bad one is reported and gives exitInvalid.
func (f *exportFlags) fillRequest(e env) int {
	if code := f.fillOptions(e); code != exitOK {
		return code
	}
	if code := f.fillManual(e); code != exitOK {
		return code
	}
	if err := fillCredentials(&f.req, f.srcHeaders, f.srcCookies); err != nil {
		fmt.Fprintf(e.stderr, "enqueue export: %v\n", err)
		return exitInvalid
	}
	if err := f.doc.fill(&f.req.Options); err != nil {
		fmt.Fprintf(e.stderr, "enqueue export: invalid request: %v\n", err)
		return exitInvalid
	}
	return exitOK
}

// fillManual sets the chapters of --chapters or the site of --site, each the
// only source of the request when given.
func (f *exportFlags) fillManual(e env) int {
	req, site := &f.req, &f.site
	if f.chaptersFile != "" {
		if req.URL != "" || req.HTML != "" {
			fmt.Fprintf(e.stderr, "enqueue export: invalid request: --chapters: give --url, --html-file or --chapters, one of them\n")
			return exitInvalid
		}
		b, err := readLimited(e, f.chaptersFile, chaptersFileLimit)
		if err == nil {
			req.Chapters, err = parseChapters(b)
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "enqueue export: invalid request: --chapters %s: %v\n", f.chaptersFile, err)
			return exitInvalid
		}
	}
	if site.URL != "" {
		if req.URL != "" || req.HTML != "" || f.chaptersFile != "" {
			fmt.Fprintf(e.stderr, "enqueue export: invalid request: --site: give --url, --html-file, --chapters or --site, one of them\n")
			return exitInvalid
		}
		site.Include, site.Exclude = f.siteInclude, f.siteExclude
		req.Site = site
		if req.ManualID == "" {
			req.ManualID = siteManualID(site.URL)
		}
		if req.Version == "" {
			req.Version = "latest"
		}
	}
	return exitOK
}

// enqueue enqueues the request and, with --wait, waits for its end.
func (f *exportFlags) enqueue(ctx context.Context, e env, client *exportclient.Client) int {
	opts := []exportclient.EnqueueOption{exportclient.Queue(f.queue)}
	if f.envelopeVersion != 0 {
		opts = append(opts, exportclient.EnvelopeVersion(f.envelopeVersion))
	}
	enqueued, err := client.Enqueue(ctx, f.req, opts...)
	if err != nil {
		return exitFor(e, err)
	}
	if !f.wait.set {
		if f.jsonOut {
			_ = json.NewEncoder(e.stdout).Encode(map[string]string{"task_id": enqueued.TaskID, "queue": enqueued.Queue, "artifact_key": enqueued.ArtifactKey})
		} else {
			fmt.Fprintf(e.stdout, "enqueued %s on %s (artifact %s)\n", enqueued.TaskID, enqueued.Queue, enqueued.ArtifactKey)
		}
		return exitOK
	}
	wctx, cancel := context.WithTimeout(ctx, f.wait.d)
	defer cancel()
	stopWatch := func() {}
	if (len(f.req.Chapters) > 0 || f.req.Site != nil) && !f.jsonOut {
		stopWatch = watchChapters(wctx, e, client, enqueued.TaskID, len(f.req.Chapters)) // a site's total comes with its progress
	}
	st, err := client.Wait(wctx, enqueued.TaskID, time.Second) // wakes on the worker's announcement; polls every second besides
	stopWatch()
	if err != nil {
		fmt.Fprintf(e.stderr, "enqueue export: task %s: %v\n", enqueued.TaskID, err)
		if errors.Is(err, exportclient.ErrUnavailable) {
			return exitUnavailable
		}
		return exitFailed
	}
	return printFinal(e, st, f.jsonOut)
}

// printFinal prints a final status: the result document on success.
func printFinal(e env, st exportclient.Status, jsonOut bool) int {
	if st.State == exportclient.StateFailed || st.State == exportclient.StateCanceled {
		fmt.Fprintf(e.stderr, "enqueue: task %s %s: %s\n", st.TaskID, st.State, st.Error)
		return exitFailed
	}
	if st.Result == nil {
		fmt.Fprintf(e.stderr, "enqueue: task %s completed without a result\n", st.TaskID)
		return exitFailed
	}
	if jsonOut {
		_ = json.NewEncoder(e.stdout).Encode(st.Result)
		return exitOK
	}
	r := st.Result
	how := "reused"
	if r.Rendered {
		how = "rendered"
	}
	fmt.Fprintf(e.stdout, "task %s: %s %s (%d pages, %d bytes, render %d ms, waited %d ms)\n",
		st.TaskID, how, r.ArtifactKey, r.Pages, r.Bytes, r.RenderMS, r.WaitedMS)
	if c := r.Chapters; c != nil {
		fmt.Fprintf(e.stdout, "chapters: %d (%d rendered, %d reused)\n", c.Total, c.Rendered, c.Reused)
	}
	if s := r.Site; s != nil {
		fmt.Fprintf(e.stdout, "site: %s navigation, discovery %d ms, %d requests\n", s.Nav, s.DiscoveryMS, s.Requests)
	}
	fmt.Fprintln(e.stdout, r.URL)
	printWarnings(e, r)
	return exitOK
}

// fillOptions reads the files of --html-file and the header and footer
// templates, and parses the margin, the scale and --no-background.
func (f *exportFlags) fillOptions(e env) int {
	req := &f.req
	bad := func(flagName, format string, args ...any) int {
		fmt.Fprintf(e.stderr, "enqueue export: invalid request: --%s: %s\n", flagName, fmt.Sprintf(format, args...))
		return exitInvalid
	}
	if f.htmlFile != "" {
		if req.URL != "" {
			return bad("html-file", "give --url or --html-file, not both")
		}
		b, err := readLimited(e, f.htmlFile, spec.MaxHTMLBytes)
		if err != nil {
			return bad("html-file", "%v", err)
		}
		req.HTML = string(b)
	}
	for _, t := range []struct {
		name, path string
		dst        *string
	}{{"header-html-file", f.headerFile, &req.Options.HeaderHTML}, {"footer-html-file", f.footerFile, &req.Options.FooterHTML}} {
		if t.path == "" {
			continue
		}
		b, err := readLimited(e, t.path, spec.MaxTemplateBytes)
		if err != nil {
			return bad(t.name, "%v", err)
		}
		*t.dst = string(b)
	}
	if f.marginMM != "" {
		v, err := strconv.ParseFloat(f.marginMM, 64)
		if err != nil {
			return bad("margin-mm", "must be a number of millimetres, got %q", f.marginMM)
		}
		req.Options.MarginMM = &exportclient.Margins{Top: &v, Right: &v, Bottom: &v, Left: &v}
	}
	if f.scale != "" {
		v, err := strconv.ParseFloat(f.scale, 64)
		if err != nil {
			return bad("scale", "must be a number between 0.1 and 2, got %q", f.scale)
		}
		req.Options.Scale = &v
	}
	if f.noBackground {
		req.Options.PrintBackground = new(false)
	}
	return exitOK
}

func readLimited(e env, path string, limit int) ([]byte, error) {
	var r io.Reader
	if path == "-" {
		r = e.stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", strings.TrimSpace(path), limit)
	}
	return b, nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ", ") }

func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// fillCredentials parses --source-header and --source-cookie; errors name the
// flag and never show a value.
func fillCredentials(req *exportclient.Request, headers, cookies stringList) error {
	for _, h := range headers {
		name, raw, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return fmt.Errorf(`--source-header: want "Name: value", got a value without a colon`)
		}
		v, err := sourceauth.ResolveValue(strings.TrimSpace(raw))
		if err != nil {
			return fmt.Errorf("--source-header %s: %w", strings.TrimSpace(name), err)
		}
		if req.Headers == nil {
			req.Headers = map[string]string{}
		}
		req.Headers[strings.TrimSpace(name)] = v
	}
	for _, c := range cookies {
		pair, attrs, _ := strings.Cut(c, ";")
		name, raw, ok := strings.Cut(pair, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return fmt.Errorf(`--source-cookie: want "name=value" or "name=value; path=/p"`)
		}
		v, err := sourceauth.ResolveValue(strings.TrimSpace(raw))
		if err != nil {
			return fmt.Errorf("--source-cookie %s: %w", strings.TrimSpace(name), err)
		}
		ck := exportclient.Cookie{Name: strings.TrimSpace(name), Value: v}
		if attrs = strings.TrimSpace(attrs); attrs != "" {
			path, ok := strings.CutPrefix(attrs, "path=")
			if !ok {
				return fmt.Errorf("--source-cookie %s: the only attribute is path=/p", ck.Name)
			}
			ck.Path = path
		}
		req.Cookies = append(req.Cookies, ck)
	}
	return nil
}

// docFlags are the document options' flags.
type docFlags struct {
	title, author, subject, keywords, creator, language string
	watermark, opacity, angle, fontSize                 string
	userPassword, ownerPassword, allow                  string
}

func (d *docFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&d.title, "title", "", "PDF metadata: title (the document's <title> otherwise)")
	fs.StringVar(&d.author, "author", "", "PDF metadata: author")
	fs.StringVar(&d.subject, "subject", "", "PDF metadata: subject")
	fs.StringVar(&d.keywords, "keywords", "", "PDF metadata: comma-separated keywords")
	fs.StringVar(&d.creator, "creator", "", "PDF metadata: creator (the application that made the document)")
	fs.StringVar(&d.language, "language", "", "PDF metadata: language, a BCP 47 tag such as en-GB (also the catalog's /Lang)")
	fs.StringVar(&d.watermark, "watermark", "", "watermark text on every page (Latin-1, as real text)")
	fs.StringVar(&d.opacity, "watermark-opacity", "", "watermark opacity 0–1 (default 0.15)")
	fs.StringVar(&d.angle, "watermark-angle", "", "watermark angle in degrees (default 45)")
	fs.StringVar(&d.fontSize, "watermark-font-size", "", "watermark font size in points (default 48)")
	fs.StringVar(&d.userPassword, "user-password", "", "encrypt (AES-256): password needed to open the PDF; env:VAR or file:PATH keeps it out of the process list")
	fs.StringVar(&d.ownerPassword, "owner-password", "", "encrypt (AES-256): owner password (required to encrypt; every permission); env:VAR or file:PATH")
	fs.StringVar(&d.allow, "allow", "", "with encryption, what a reader may do: comma-separated "+strings.Join(spec.PermissionNames, ", ")+" (default: nothing but reading)")
}

// fill sets the document options the flags give; errors name the flag and
// never show a password.
func (d *docFlags) fill(o *exportclient.Options) error {
	if d.title != "" || d.author != "" || d.subject != "" || d.keywords != "" || d.creator != "" || d.language != "" {
		m := &exportclient.Metadata{Title: d.title, Author: d.author, Subject: d.subject, Creator: d.creator, Language: d.language}
		for k := range strings.SplitSeq(d.keywords, ",") {
			if k = strings.TrimSpace(k); k != "" {
				m.Keywords = append(m.Keywords, k)
			}
		}
		o.Metadata = m
	}
	if d.watermark != "" || d.opacity != "" || d.angle != "" || d.fontSize != "" {
		w := &exportclient.Watermark{Text: d.watermark}
		for _, f := range []struct {
			name, v string
			dst     **float64
		}{{"watermark-opacity", d.opacity, &w.Opacity}, {"watermark-angle", d.angle, &w.Angle}, {"watermark-font-size", d.fontSize, &w.FontSizePt}} {
			if f.v == "" {
				continue
			}
			v, err := strconv.ParseFloat(f.v, 64)
			if err != nil {
				return fmt.Errorf("--%s: must be a number, got %q", f.name, f.v)
			}
			*f.dst = &v
		}
		o.Watermark = w
	}
	if d.userPassword != "" || d.ownerPassword != "" || d.allow != "" {
		e := &exportclient.Encryption{}
		for _, f := range []struct {
			name, raw string
			dst       *string
		}{{"user-password", d.userPassword, &e.UserPassword}, {"owner-password", d.ownerPassword, &e.OwnerPassword}} {
			if f.raw == "" {
				continue
			}
			v, err := sourceauth.ResolveValue(f.raw)
			if err != nil {
				return fmt.Errorf("--%s: %w", f.name, err)
			}
			*f.dst = v
		}
		for a := range strings.SplitSeq(d.allow, ",") {
			if a = strings.TrimSpace(a); a != "" {
				e.Allow = append(e.Allow, a)
			}
		}
		o.Encryption = e
	}
	return nil
}

// siteManualID is --manual's default for --site: the site's host, which
// is a valid manual id once anything but letters, digits, '.', '_' and '-'
// is replaced.
func siteManualID(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	id := strings.Map(func(r rune) rune {
		if r == '.' || r == '_' || r == '-' || r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return '-'
	}, u.Hostname())
	return strings.Trim(id, ".-_")
}
