package engine

import (
	"context"
	"fmt"
	"io"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/pdfexport/pdfexport/internal/assemble/pdfperm"
)

// Document is a PDF read once for a chain of operations and written once.
// A worker runs an export's document options on one (a long manual costs
// its reading and writing, not the operations), and the in-memory
// operations of this package that draw marks or encrypt wrap one.
type Document struct {
	pc *model.Context
}

// PrintedConf is pdfcpu's configuration for a PDF this service printed
// itself: Conf's, offline, without the optimization pass, which rewrites
// resources and costs time on a document Chromium wrote with none to
// share, and without validating the output again.
func PrintedConf() *model.Configuration {
	conf := Conf()
	conf.Offline = true
	conf.Optimize = false
	conf.OptimizeBeforeWriting = false
	conf.PostProcessValidate = false
	return conf
}

// ReadDocument reads and validates the PDF r holds under conf (Conf for a
// caller's PDF, PrintedConf for one this service printed). A PDF pdfcpu
// cannot read is an *InputError.
func ReadDocument(ctx context.Context, r io.ReadSeeker, conf *model.Configuration) (*Document, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pc, err := api.ReadValidateAndOptimize(r, conf)
	if err != nil {
		return nil, &InputError{Err: err}
	}
	return &Document{pc: pc}, nil
}

// Pages is the document's page count.
func (d *Document) Pages() (int, error) {
	if err := d.pc.EnsurePageCount(); err != nil {
		return 0, fmt.Errorf("counting the pages: %w", err)
	}
	return d.pc.PageCount, nil
}

// CatalogHas reports whether the document catalog holds every key.
func (d *Document) CatalogHas(keys ...string) (bool, error) {
	root, err := d.pc.Catalog()
	if err != nil {
		return false, fmt.Errorf("the catalog: %w", err)
	}
	for _, k := range keys {
		if root[k] == nil {
			return false, nil
		}
	}
	return true, nil
}

// AddMarks draws marks one after another, on top of the content (stamps)
// or beneath it (watermarks). A mark that cannot be drawn is an
// *InputError wrapping its *MarkError.
func (d *Document) AddMarks(ctx context.Context, marks []Mark, onTop bool) error {
	if err := CheckMarks(marks, onTop); err != nil {
		return err
	}
	for i, m := range marks {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := d.addMark(m, onTop); err != nil {
			return markErr(err, i)
		}
	}
	return nil
}

func (d *Document) addMark(m Mark, onTop bool) error {
	wm, err := m.watermark(onTop)
	if err != nil {
		return err
	}
	var sel []string
	if m.Pages != "" {
		sel = []string{m.Pages}
	}
	pages, err := api.PagesForPageSelection(d.pc.PageCount, sel, true, true)
	if err != nil {
		return &MarkError{Part: PartPages, Err: err}
	}
	// Only a literal text with stand-ins needs the objects the mark adds
	// told apart, for restoreStandIns: the table of a long manual is large.
	var before map[int]bool
	if _, stood := literalText(m.Text); m.Literal && stood {
		before = make(map[int]bool, len(d.pc.Table))
		for n := range d.pc.Table {
			before[n] = true
		}
	}
	if err := pdfcpu.AddWatermarks(d.pc, pages, wm); err != nil {
		return err
	}
	if before != nil {
		return restoreStandIns(d.pc, before)
	}
	return nil
}

// SetInfo sets the information dictionary's entries of props whose value
// is not empty (Title, Author, Subject, Keywords, Creator, a custom key).
func (d *Document) SetInfo(props map[string]string) error {
	set := map[string]string{}
	for k, v := range props {
		if v != "" {
			set[k] = v
		}
	}
	if len(set) == 0 {
		return nil
	}
	if err := pdfcpu.PropertiesAdd(d.pc, set); err != nil {
		return fmt.Errorf("writing the metadata: %w", err)
	}
	return nil
}

// SetLang sets the catalog's Lang, the document's natural language.
func (d *Document) SetLang(lang string) error {
	root, err := d.pc.Catalog()
	if err != nil {
		return fmt.Errorf("the catalog: %w", err)
	}
	root["Lang"] = types.StringLiteral(lang)
	return nil
}

// Encrypt has the document written encrypted with AES-256 under opts.
func (d *Document) Encrypt(opts EncryptOptions) error {
	owner, err := opts.owner()
	if err != nil {
		return err
	}
	d.pc.Cmd = model.ENCRYPT
	d.pc.UserPW, d.pc.OwnerPW = opts.UserPassword, owner
	d.pc.EncryptUsingAES, d.pc.EncryptKeyLength = true, 256
	d.pc.Permissions = pdfperm.Flags(opts.Allow)
	return nil
}

// Write writes the document to w. Classic writes no object streams and a
// classic cross-reference table: page dictionaries stay uncompressed, as
// Chromium writes them, for a reader that counts pages by scanning.
func (d *Document) Write(w io.Writer, classic bool) error {
	if classic {
		d.pc.WriteObjectStream, d.pc.WriteXRefStream = false, false
	}
	if err := api.WriteContext(d.pc, w); err != nil {
		return fmt.Errorf("writing the PDF: %w", err)
	}
	return nil
}
