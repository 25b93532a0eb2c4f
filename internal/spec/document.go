package spec

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Document options: what the worker writes into the PDF Chromium printed,
// after printing (options.metadata, options.watermark, options.encryption).
// An export that asks for none of them streams from Chromium into storage;
// one that asks for any is spooled to a temporary file and post-processed
// file to file (internal/tasks/export). All three are part of the artifact's
// identity; the passwords only through the keyed identity of their
// reference (EncryptionRef), like per-export credentials.

// Metadata is written to the PDF's document information dictionary;
// Language also becomes the catalog's /Lang.
type Metadata struct {
	Title    string   `json:"title,omitempty"`
	Author   string   `json:"author,omitempty"`
	Subject  string   `json:"subject,omitempty"`
	Keywords []string `json:"keywords,omitempty"`
	Creator  string   `json:"creator,omitempty"`
	// Language is a BCP 47 tag such as "en" or "de-CH".
	Language string `json:"language,omitempty"`
}

// Watermark is text drawn on every page, as real (extractable) text, in
// Helvetica, centred. Nil fields take the defaults.
type Watermark struct {
	Text       string   `json:"text"`
	Opacity    *float64 `json:"opacity,omitempty"`      // 0–1, default 0.15
	Angle      *float64 `json:"angle,omitempty"`        // degrees counter-clockwise, -180–180, default 45
	FontSizePt *float64 `json:"font_size_pt,omitempty"` // 4–400, default 48
}

// Encryption encrypts the PDF with AES-256. In a request it carries the
// passwords, which are secrets: the enqueuer stores them beside the task
// and the envelope keeps only Allow and an EncryptionRef. OwnerPassword is
// required; UserPassword, when set, is needed to open the PDF at all.
// Allow lists what a reader with the user password may do (PermissionNames);
// the owner password may do everything.
type Encryption struct {
	UserPassword  string   `json:"user_password,omitempty"`
	OwnerPassword string   `json:"owner_password,omitempty"`
	Allow         []string `json:"allow,omitempty"`
}

// Passwords are an encryption's secrets, as internal/storage/sidestore keeps them.
type Passwords struct {
	User  string `json:"user,omitempty"`
	Owner string `json:"owner"`
}

// Passwords returns e's passwords.
func (e *Encryption) Passwords() Passwords {
	return Passwords{User: e.UserPassword, Owner: e.OwnerPassword}
}

// IdentityBytes is the byte string the keyed identity of the passwords
// hashes (internal/storage/sidestore). Its "pdfexport:encryption" prefix keeps it apart from
// credentials' identities under the same key.
func (p Passwords) IdentityBytes() []byte {
	b, _ := json.Marshal(p)
	return append([]byte("pdfexport:encryption\x00"), b...)
}

// EncryptionRef names the passwords stored beside the task, which owns
// them, like CredentialsRef: Identity is their keyed hash and enters the
// artifact key. Envelope-only: a request that names it is refused.
type EncryptionRef struct {
	ID       string `json:"id"`
	Identity string `json:"identity"`
}

// PermissionNames are the accepted options.encryption.allow values, in
// the order of the PDF's permission bits: print (low quality unless
// print_high), print_high (full quality; implies print), copy (text and
// graphics), modify, annotate (and fill forms), fill_forms,
// extract_accessibility, assemble (insert, rotate, delete pages).
var PermissionNames = []string{"print", "print_high", "copy", "modify", "annotate", "fill_forms", "extract_accessibility", "assemble"}

// Defaults and limits of the document options.
const (
	DefaultWatermarkOpacity    = 0.15
	DefaultWatermarkAngle      = 45.0
	DefaultWatermarkFontSizePt = 48.0
	MaxMetadataBytes           = 1024 // each of title, author, subject, creator
	MaxKeywords                = 64
	MaxKeywordBytes            = 256
	MaxWatermarkBytes          = 256
	MaxPasswordBytes           = 127 // AES-256 (PDF 2.0) uses the first 127 bytes
)

// languageRE is a BCP 47 tag's shape: a 2–8 letter primary subtag and
// alphanumeric subtags of 1–8.
var languageRE = regexp.MustCompile(`^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$`)

// DocumentSettings are the document options resolved, as PrintSettings
// carries them: nil when the export asks for none, so the canonical form
// (and the artifact key) of other exports does not change.
type DocumentSettings struct {
	Metadata   *Metadata           `json:"metadata,omitempty"`
	Watermark  *WatermarkSettings  `json:"watermark,omitempty"`
	Encryption *EncryptionSettings `json:"encryption,omitempty"`
	// FastWebView: linearized last, after everything else (omitted when
	// false, so other artifacts keep their keys).
	FastWebView bool `json:"fast_web_view,omitempty"`
}

// Rewrites reports whether d changes the PDF's content (metadata,
// watermark, encryption): whether pdfcpu post-processes it. A fast web
// view alone only reorders it.
func (d *DocumentSettings) Rewrites() bool {
	return d != nil && (d.Metadata != nil || d.Watermark != nil || d.Encryption != nil)
}

// WatermarkSettings is a watermark with the defaults applied.
type WatermarkSettings struct {
	Text       string  `json:"text"`
	Opacity    float64 `json:"opacity"`
	Angle      float64 `json:"angle"`
	FontSizePt float64 `json:"font_size_pt"`
}

// EncryptionSettings are the permissions, canonical (PermissionNames
// order), and the keyed identity of the passwords (set from the envelope's
// EncryptionRef when the key is computed).
type EncryptionSettings struct {
	Allow     []string `json:"allow"`
	Passwords string   `json:"passwords"`
}

// Has reports whether the permission name is allowed.
func (e *EncryptionSettings) Has(name string) bool { return slices.Contains(e.Allow, name) }

func (o Options) documentSettings() *DocumentSettings {
	if !o.HasDocumentOptions() {
		return nil
	}
	d := &DocumentSettings{FastWebView: o.FastWebView}
	if m := o.Metadata; m != nil {
		c := *m
		c.Keywords = slices.Clone(m.Keywords)
		d.Metadata = &c
	}
	if w := o.Watermark; w != nil {
		d.Watermark = &WatermarkSettings{Text: w.Text, Opacity: DefaultWatermarkOpacity, Angle: DefaultWatermarkAngle, FontSizePt: DefaultWatermarkFontSizePt}
		if w.Opacity != nil {
			d.Watermark.Opacity = *w.Opacity
		}
		if w.Angle != nil {
			d.Watermark.Angle = *w.Angle
		}
		if w.FontSizePt != nil {
			d.Watermark.FontSizePt = *w.FontSizePt
		}
	}
	if e := o.Encryption; e != nil {
		d.Encryption = &EncryptionSettings{Allow: []string{}}
		for _, n := range PermissionNames {
			if slices.Contains(e.Allow, n) {
				d.Encryption.Allow = append(d.Encryption.Allow, n)
			}
		}
	}
	return d
}

// validateDocument checks the document options; envelope says whether
// passwords are refused (an envelope carries none).
func (o Options) validateDocument(envelope bool) []error {
	var errs []error
	add := func(e *FieldError) { errs = append(errs, e) }
	text := func(field, v string, max int) {
		switch {
		case len(v) > max:
			add(fieldErr(field, "longer than %d bytes", max))
		case !utf8.ValidString(v):
			add(fieldErr(field, "must be valid UTF-8"))
		case !printable(v):
			add(fieldErr(field, "must be printable text without control characters"))
		}
	}
	if m := o.Metadata; m != nil {
		for _, f := range []struct{ name, v string }{{"title", m.Title}, {"author", m.Author}, {"subject", m.Subject}, {"creator", m.Creator}} {
			text("options.metadata."+f.name, f.v, MaxMetadataBytes)
		}
		if len(m.Keywords) > MaxKeywords {
			add(fieldErr("options.metadata.keywords", "more than %d keywords", MaxKeywords))
		} else {
			for i, k := range m.Keywords {
				field := fmt.Sprintf("options.metadata.keywords[%d]", i)
				if strings.TrimSpace(k) == "" {
					add(fieldErr(field, "empty keyword"))
					continue
				}
				text(field, k, MaxKeywordBytes)
			}
		}
		if m.Language != "" && (len(m.Language) > 35 || !languageRE.MatchString(m.Language)) {
			add(fieldErr("options.metadata.language", "must be a BCP 47 language tag such as en, en-GB or de-CH (at most 35 characters)"))
		}
	}
	if w := o.Watermark; w != nil {
		switch {
		case strings.TrimSpace(w.Text) == "":
			add(fieldErr("options.watermark.text", "required when watermark is given"))
		case len(w.Text) > MaxWatermarkBytes:
			add(fieldErr("options.watermark.text", "longer than %d bytes", MaxWatermarkBytes))
		case !latin1Printable(w.Text):
			add(fieldErr("options.watermark.text", "must be printable Latin-1 text (the watermark font, Helvetica, has no other characters)"))
		}
		if w.Opacity != nil && !(*w.Opacity >= 0 && *w.Opacity <= 1) {
			add(fieldErr("options.watermark.opacity", "must be between 0 and 1, got %g", *w.Opacity))
		}
		if w.Angle != nil && !(*w.Angle >= -180 && *w.Angle <= 180) {
			add(fieldErr("options.watermark.angle", "must be between -180 and 180 degrees, got %g", *w.Angle))
		}
		if w.FontSizePt != nil && !(*w.FontSizePt >= 4 && *w.FontSizePt <= 400) {
			add(fieldErr("options.watermark.font_size_pt", "must be between 4 and 400 points, got %g", *w.FontSizePt))
		}
	}
	if e := o.Encryption; e != nil {
		if envelope {
			for _, f := range []struct{ name, v string }{{"owner_password", e.OwnerPassword}, {"user_password", e.UserPassword}} {
				if f.v != "" {
					add(fieldErr("options.encryption."+f.name, "passwords travel beside the task, never in it: enqueue through exportclient, bin/api or bin/enqueue, which store them and queue encryption_ref"))
				}
			}
		} else {
			password := func(field, v string) {
				switch {
				case len(v) > MaxPasswordBytes:
					add(fieldErr(field, "longer than %d bytes", MaxPasswordBytes))
				case strings.IndexFunc(v, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0:
					// Readers normalize non-ASCII passwords differently
					// (SASLprep or not): one typed correctly could fail.
					add(fieldErr(field, "must be printable ASCII (readers disagree on how to encode other characters)"))
				}
			}
			if e.OwnerPassword == "" {
				add(fieldErr("options.encryption.owner_password", "required when encryption is given"))
			} else {
				password("options.encryption.owner_password", e.OwnerPassword)
			}
			if e.UserPassword != "" {
				password("options.encryption.user_password", e.UserPassword)
				if e.UserPassword == e.OwnerPassword {
					add(fieldErr("options.encryption.user_password", "must differ from the owner password (a reader with it would have every permission)"))
				}
			}
		}
		seen := map[string]bool{}
		for i, a := range e.Allow {
			field := fmt.Sprintf("options.encryption.allow[%d]", i)
			switch {
			case !slices.Contains(PermissionNames, a):
				add(fieldErr(field, "must be one of %s, got %q", strings.Join(PermissionNames, ", "), a))
			case seen[a]:
				add(fieldErr(field, "%s is listed twice", a))
			}
			seen[a] = true
		}
	}
	return errs
}

// latin1Printable reports whether s has only printable Latin-1 characters.
func latin1Printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r > 0xff {
			return false
		}
	}
	return true
}

// validate checks an envelope's encryption reference against its options.
func (r *EncryptionRef) validate(enc *Encryption) []error {
	switch {
	case r == nil && enc == nil:
		return nil
	case r == nil:
		return []error{fieldErr("encryption_ref", "options.encryption needs the reference to its stored passwords; enqueue through exportclient, bin/api or bin/enqueue")}
	case enc == nil:
		return []error{fieldErr("encryption_ref", "given without options.encryption")}
	case r.ID == "" || len(r.Identity) != 64 || strings.Trim(r.Identity, "0123456789abcdef") != "":
		return []error{fieldErr("encryption_ref", "needs an id and a 64-hex-digit identity")}
	}
	return nil
}
