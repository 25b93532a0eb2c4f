package engine

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"time"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// Bounds of what Embed attaches.
const (
	MaxEmbeds = 64
	// MaxEmbedExpansion bounds what an attached archive unpacks to: the
	// PDF's readers extract attachments, and an archive that unpacks to
	// far more than the request could carry is a decompression bomb.
	MaxEmbedExpansion = 256 << 20
	// maxEmbedRatio bounds an archive entry's compression: Deflate's
	// best is about 1:1000, real files stay far below it.
	maxEmbedRatio = 200
	maxZipEntries = 10000
)

// ErrArchiveBomb is an attached archive refused for what it unpacks to.
var ErrArchiveBomb = errors.New("an archive that unpacks to too much")

// EmbedMeta is what Gotenberg's embedsMetadata sets on an attachment.
type EmbedMeta struct {
	MimeType     string // the embedded file's /Subtype, e.g. text/xml
	Relationship string // its /AFRelationship: Source, Data, Alternative, Supplement, EncryptedPayload, FormData, Schema, Unspecified
}

// EmbedOptions configure Embed.
type EmbedOptions struct {
	Files []File
	Meta  map[string]EmbedMeta // by file name
}

var (
	mimeType       = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$`)
	relationships  = []string{"Source", "Data", "Alternative", "Supplement", "EncryptedPayload", "FormData", "Schema", "Unspecified"}
	embedTimestamp = time.Unix(0, 0).UTC()
)

// CheckEmbeds refuses what Embed would: too many files, a metadata key
// for no file or with an unknown relationship or MIME type, an archive
// bomb.
func CheckEmbeds(opts EmbedOptions) error {
	if len(opts.Files) > MaxEmbeds {
		return fmt.Errorf("more than %d files to embed", MaxEmbeds)
	}
	names := map[string]bool{}
	for _, f := range opts.Files {
		if err := checkArchive(f); err != nil {
			return &InputError{File: f.Name, Err: err}
		}
		names[f.Name] = true
	}
	for name, m := range opts.Meta {
		switch {
		case !names[name]:
			return fmt.Errorf("embedsMetadata names '%s', which is not an embedded file", name)
		case m.MimeType != "" && !mimeType.MatchString(m.MimeType):
			return fmt.Errorf("the mimeType '%s' of '%s' is not a MIME type", m.MimeType, name)
		case m.Relationship != "" && !slices.Contains(relationships, m.Relationship):
			return fmt.Errorf("the relationship '%s' of '%s' is not one of %v", m.Relationship, name, relationships)
		}
	}
	return nil
}

// Embed attaches files to pdf (its EmbeddedFiles), with their
// metadata; a file with metadata is also an associated file of the
// document (the catalog's /AF), as PDF/A-3 and Factur-X have them.
func Embed(ctx context.Context, pdf []byte, opts EmbedOptions) ([]byte, error) {
	if len(opts.Files) == 0 {
		return pdf, nil
	}
	if err := CheckEmbeds(opts); err != nil {
		var ie *InputError
		if errors.As(err, &ie) {
			return nil, err
		}
		return nil, &InputError{Err: err}
	}
	src, err := readPDF(pdf)
	if err != nil {
		return nil, &InputError{Err: err}
	}
	xt := src.XRefTable
	if err := xt.LocateNameTree("EmbeddedFiles", true); err != nil {
		return nil, &InputError{Err: err}
	}
	var associated types.Array
	for _, f := range opts.Files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ref, err := attach(xt, f, opts.Meta[f.Name])
		if err != nil {
			return nil, &InputError{File: f.Name, Err: err}
		}
		if m, ok := opts.Meta[f.Name]; ok && m != (EmbedMeta{}) {
			associated = append(associated, *ref)
		}
	}
	if len(associated) > 0 {
		if err := addAssociated(xt, associated); err != nil {
			return nil, &InputError{Err: err}
		}
	}
	return writePDF(src)
}

// attach adds one file specification to the EmbeddedFiles name tree.
func attach(xt *model.XRefTable, f File, m EmbedMeta) (*types.IndirectRef, error) {
	// A fixed date: the same inputs make the same PDF.
	a := model.Attachment{Reader: bytes.NewReader(f.Data), ID: f.Name, FileName: f.Name, ModTime: &embedTimestamp}
	d, err := xt.NewFileSpecDictForAttachment(a)
	if err != nil {
		return nil, err
	}
	if m.Relationship != "" {
		d["AFRelationship"] = types.Name(m.Relationship)
	}
	if m.MimeType != "" {
		if ef, err := xt.DereferenceDict(d["EF"]); err == nil && ef != nil {
			if sd, _, err := xt.DereferenceStreamDict(ef["F"]); err == nil && sd != nil {
				sd.Dict["Subtype"] = types.Name(m.MimeType)
			}
		}
	}
	ref, err := xt.IndRefForNewObject(d)
	if err != nil {
		return nil, err
	}
	names := model.NameMap{f.Name: []types.Dict{d}}
	if err := xt.Names["EmbeddedFiles"].Add(xt, f.Name, *ref, names, []string{"F", "UF"}); err != nil {
		return nil, err
	}
	return ref, nil
}

// addAssociated appends file specifications to the catalog's /AF.
func addAssociated(xt *model.XRefTable, refs types.Array) error {
	root, err := xt.Catalog()
	if err != nil {
		return err
	}
	af, err := xt.DereferenceArray(root["AF"])
	if err != nil {
		return err
	}
	root["AF"] = append(slices.Clone(af), refs...)
	return nil
}

// checkArchive refuses a zip or gzip file that unpacks to more than
// MaxEmbedExpansion, or compresses an entry beyond what real files do.
// Nothing is extracted: a zip's directory says what it holds, a gzip
// stream is read through (bounded) without being kept.
func checkArchive(f File) error {
	switch {
	case bytes.HasPrefix(f.Data, []byte("PK\x03\x04")):
		zr, err := zip.NewReader(bytes.NewReader(f.Data), int64(len(f.Data)))
		if err != nil {
			return nil // not a zip a reader would open either
		}
		if len(zr.File) > maxZipEntries {
			return fmt.Errorf("%w: more than %d entries", ErrArchiveBomb, maxZipEntries)
		}
		var total uint64
		for _, e := range zr.File {
			total += e.UncompressedSize64
			if total > MaxEmbedExpansion {
				return fmt.Errorf("%w: more than %d bytes", ErrArchiveBomb, MaxEmbedExpansion)
			}
			if e.UncompressedSize64 > 1<<20 && e.UncompressedSize64/max(e.CompressedSize64, 1) > maxEmbedRatio {
				return fmt.Errorf("%w: '%s' is compressed %d to 1", ErrArchiveBomb, e.Name, e.UncompressedSize64/max(e.CompressedSize64, 1))
			}
		}
	case bytes.HasPrefix(f.Data, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(bytes.NewReader(f.Data))
		if err != nil {
			return nil
		}
		limit := min(int64(MaxEmbedExpansion), max(int64(len(f.Data))*maxEmbedRatio, 1<<20))
		n, _ := io.Copy(io.Discard, io.LimitReader(zr, limit+1))
		if n > limit {
			return fmt.Errorf("%w: more than %d bytes from %d", ErrArchiveBomb, limit, len(f.Data))
		}
	}
	return nil
}
