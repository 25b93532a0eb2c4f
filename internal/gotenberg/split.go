package gotenberg

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pdfexport/pdfexport/internal/assemble/engine"
)

// maxSplitBytes bounds a split's parts together: each carries what its
// pages share with the others, so they can weigh many times the input.
const maxSplitBytes = 4 * MaxEngineBytes

// readSplit reads splitMode, splitSpan and splitUnify as Gotenberg does;
// ok is false when no split is asked for (or a field is invalid, which
// is in f's errors).
func readSplit(f *form) (opts engine.SplitOptions, ok bool) {
	mode, span := f.value("splitMode"), strings.Join(strings.Fields(f.value("splitSpan")), "")
	unify := f.bool("splitUnify", false)
	valid := true
	if mode != "" && mode != engine.SplitIntervals && mode != engine.SplitPages {
		f.invalid("splitMode", mode, fmt.Errorf("wrong value, expected either '%s' or '%s'", engine.SplitIntervals, engine.SplitPages))
		valid = false
	}
	if mode == engine.SplitIntervals && span != "" {
		n, err := strconv.Atoi(span)
		if err == nil && n < 1 {
			err = errors.New("value is inferior to 1")
		}
		if err != nil {
			f.invalid("splitSpan", span, err)
			valid = false
		}
	}
	if unify && mode != "" && mode != engine.SplitPages {
		f.invalid("splitUnify", f.value("splitUnify"), fmt.Errorf("unify is not available for split mode '%s'", mode))
		valid = false
	}
	if mode != "" && span == "" && valid {
		f.errs = append(f.errs, "form field 'splitSpan' is required")
		valid = false
	}
	return engine.SplitOptions{Mode: mode, Span: span, Unify: unify}, valid && mode != ""
}

// splitStep is a conversion's split: its PDF (named as the answer) into
// <name>_<i>.pdf, or <name>.pdf unified.
func splitStep(f *form) (postStep, bool) {
	opts, ok := readSplit(f)
	if !ok {
		return postStep{}, false
	}
	return postStep{order: stepSplit, run: func(ctx context.Context, files []upload) ([]upload, error) {
		var out []upload
		var size int64
		for _, in := range files {
			// The bounds are the request's, over all its PDFs.
			o := opts
			o.Name, o.MaxParts, o.MaxBytes = in.name, engine.MaxSplitParts-len(out), maxSplitBytes-size
			if o.MaxParts <= 0 || o.MaxBytes <= 0 {
				return nil, badRequest("Invalid form data: form field 'splitSpan' is invalid (the PDFs split into more than %d parts or %d bytes)", engine.MaxSplitParts, maxSplitBytes)
			}
			parts, err := engine.Split(ctx, in.data, o)
			if errors.Is(err, engine.ErrPageSelection) {
				// Gotenberg's answer when no engine can split with the span.
				return nil, badRequest("The requested split mode is not supported, or no PDF engine could process it. Valid modes: 'intervals', 'pages'.")
			}
			if err != nil {
				return nil, pageErr(in.name, err)
			}
			for _, p := range parts {
				out = append(out, upload{name: p.Name, data: p.Data})
				size += int64(len(p.Data))
			}
		}
		return out, nil
	}}, true
}

// splitRoute is POST /forms/pdfengines/split: each PDF split, then the
// steps of the other fields on every part, as on a conversion's PDF.
func splitRoute(f *form) engineJob {
	// readSplit names a missing span beside a mode.
	if f.value("splitMode") == "" {
		f.errs = append(f.errs, "form field 'splitMode' is required")
		if f.value("splitSpan") == "" {
			f.errs = append(f.errs, "form field 'splitSpan' is required")
		}
	}
	steps := postSteps(f)
	return func(ctx context.Context, f *form, pdfs []upload) ([]upload, error) {
		if err := f.err(); err != nil {
			return nil, err
		}
		files := pdfs
		for _, s := range steps {
			var err error
			if files, err = s.run(ctx, files); err != nil {
				return nil, err
			}
		}
		return files, nil
	}
}
