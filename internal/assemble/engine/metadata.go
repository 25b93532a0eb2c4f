package engine

import (
	"github.com/pdfexport/pdfexport/internal/assemble/pdfclaim"

	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MetadataOptions are the metadata to write: Gotenberg's metadata object,
// ExifTool's tag names to values (a string, a list of strings, a boolean
// or a number).
type MetadataOptions struct {
	Values map[string]any
}

// MaxMetadataKeys bounds the keys of one metadata object.
const MaxMetadataKeys = 64

// MetadataError names every key of a metadata object that cannot be
// written, in key order. It comes wrapped in an *InputError.
type MetadataError struct {
	Keys []KeyError
}

// KeyError is one refused metadata key and why.
type KeyError struct {
	Key string
	Why string
}

func (e *MetadataError) Error() string {
	parts := make([]string, len(e.Keys))
	for i, k := range e.Keys {
		parts[i] = fmt.Sprintf("'%s' (%s)", k.Key, k.Why)
	}
	return "invalid metadata: " + strings.Join(parts, ", ")
}

// The keys ExifTool would take as commands to rename, move, link or
// chmod the file rather than as metadata; Gotenberg drops them, with or
// without a group prefix ("System:FileName").
var fileTags = []string{"FileName", "Directory", "HardLink", "SymLink", "FilePermissions"}

// tagName is ExifTool's tag name syntax, with an optional group prefix;
// a leading hyphen would be an ExifTool option.
var tagName = regexp.MustCompile(`^[a-zA-Z0-9_.:][a-zA-Z0-9\-_.:]*$`)

// metaPlan is a checked metadata object: the information dictionary's
// entries to set, and the XMP-only properties.
type metaPlan struct {
	info    map[string]infoValue
	rights  *string
	marked  *bool
	version string
	claim   *pdfclaim.Claim // set by Conform: the identification to write
}

// infoValue is one information dictionary entry: text, a date or a name.
type infoValue struct {
	text string
	date *time.Time
	name string
}

// CheckMetadata reports, as an *InputError holding a *MetadataError,
// every key of values that cannot be written; a caller checks a form's
// metadata before it renders.
func CheckMetadata(values map[string]any) error {
	_, err := planMetadata(values)
	return err
}

// planMetadata checks values and sorts them into where they are written.
func planMetadata(values map[string]any) (metaPlan, error) {
	p := metaPlan{info: map[string]infoValue{}}
	if len(values) > MaxMetadataKeys {
		return p, &InputError{Err: fmt.Errorf("%d metadata keys, at most %d", len(values), MaxMetadataKeys)}
	}
	var bad []KeyError
	for _, key := range slices.Sorted(maps.Keys(values)) {
		if err := p.add(key, values[key]); err != nil {
			bad = append(bad, KeyError{Key: printableKey(key), Why: err.Error()})
		}
	}
	if len(bad) > 0 {
		return p, &InputError{Err: &MetadataError{Keys: bad}}
	}
	return p, nil
}

// add checks one key and its value into p.
func (p *metaPlan) add(key string, value any) error {
	if !tagName.MatchString(key) {
		return errors.New("not a tag name")
	}
	bare := key[strings.LastIndex(key, ":")+1:]
	if bare == "" {
		return errors.New("not a tag name")
	}
	for _, t := range fileTags {
		if strings.EqualFold(bare, t) {
			return nil // a file operation, not metadata: dropped, as Gotenberg does
		}
	}
	words, err := metadataWords(value)
	if err != nil {
		return err
	}
	text := strings.Join(words, ", ")
	switch canon := canonicalKey(bare); canon {
	case "CreationDate", "ModDate":
		t, err := parseMetadataDate(text)
		if err != nil {
			return err
		}
		p.info[canon] = infoValue{date: &t}
	case "Trapped":
		n, err := trappedName(text)
		if err != nil {
			return err
		}
		p.info[canon] = infoValue{name: n}
	case "Copyright":
		p.rights = &text
	case "Marked":
		b, err := strconv.ParseBool(text)
		if err != nil {
			return errors.New("not true or false")
		}
		p.marked = &b
	case "PDFVersion":
		if text != "1.7" {
			return errors.New("the files written are PDF 1.7")
		}
		p.version = text
	default:
		p.info[canon] = infoValue{text: text}
	}
	return nil
}

// metadataKeys are the information dictionary's keys and the XMP-only
// properties, by ExifTool's names and their aliases.
var metadataKeys = map[string]string{
	"title": "Title", "author": "Author", "subject": "Subject", "keywords": "Keywords",
	"creator": "Creator", "producer": "Producer", "trapped": "Trapped",
	"createdate": "CreationDate", "creationdate": "CreationDate",
	"moddate": "ModDate", "modifydate": "ModDate",
	"copyright": "Copyright", "rights": "Copyright", "marked": "Marked", "pdfversion": "PDFVersion",
}

// canonicalKey is key's information dictionary name (or XMP property);
// an unknown key is a custom entry of the dictionary, as written.
func canonicalKey(key string) string {
	if c, ok := metadataKeys[strings.ToLower(key)]; ok {
		return c
	}
	return key
}

// metadataWords is a value as text: a list is its strings, a boolean or
// a number as ExifTool prints them. A control character is refused, as
// Gotenberg refuses it.
func metadataWords(value any) ([]string, error) {
	var words []string
	switch v := value.(type) {
	case string:
		words = []string{v}
	case []any:
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("a list holds a %s, not only strings", jsonKind(e))
			}
			words = append(words, s)
		}
	case bool:
		words = []string{strconv.FormatBool(v)}
	case float64:
		words = []string{strconv.FormatFloat(v, 'g', -1, 64)}
	default:
		return nil, fmt.Errorf("a %s is not a value", jsonKind(value))
	}
	for _, w := range words {
		if strings.ContainsAny(w, "\n\r\x00") {
			return nil, errors.New("contains a control character")
		}
	}
	return words, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "list"
	case float64:
		return "number"
	case bool:
		return "boolean"
	}
	return "string"
}

func printableKey(k string) string {
	k = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, k)
	if len(k) > 64 {
		k = strings.ToValidUTF8(k[:64], "") + "…"
	}
	return k
}

// trappedName is a Trapped value as the dictionary's name.
func trappedName(s string) (string, error) {
	for _, n := range []string{"True", "False", "Unknown"} {
		if strings.EqualFold(s, n) {
			return n, nil
		}
	}
	return "", errors.New("not True, False or Unknown")
}

// metadataDate is a date as ExifTool takes it ("2006:09:18 16:27:50-04:00"),
// in RFC 3339 or as a PDF date ("D:20060918162750-04'00'"); the time and
// the zone may be left out.
var metadataDate = regexp.MustCompile(`^(?:D:)?(\d{4})[-:]?(\d{2})[-:]?(\d{2})(?:[T ]?(\d{2}):?(\d{2})(?::?(\d{2}))?(?:\.\d+)?)?(Z|[+-]\d{2}(?:[:']?\d{2}'?)?)?$`)

func parseMetadataDate(s string) (time.Time, error) {
	m := metadataDate.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return time.Time{}, errors.New("not a date such as 2006-09-18T16:27:50-04:00")
	}
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	loc := time.UTC
	if z := strings.NewReplacer(":", "", "'", "").Replace(m[7]); len(z) >= 3 {
		off := atoi(z[1:3]) * 3600
		if len(z) == 5 {
			off += atoi(z[3:5]) * 60
		}
		if z[0] == '-' {
			off = -off
		}
		loc = time.FixedZone("", off)
	}
	t := time.Date(n(1), time.Month(n(2)), n(3), n(4), n(5), n(6), 0, loc)
	if t.Month() != time.Month(n(2)) || t.Day() != n(3) || n(4) > 23 || n(5) > 59 || n(6) > 59 {
		return time.Time{}, errors.New("not a date of the calendar")
	}
	return t, nil
}

func atoi(s string) int { v, _ := strconv.Atoi(s); return v }

// pdfDate is t as a PDF date string.
func pdfDate(t time.Time) string {
	s := t.Format("D:20060102150405")
	_, off := t.Zone()
	if t.Location() == time.UTC {
		return s + "Z"
	}
	sign := '+'
	if off < 0 {
		sign, off = '-', -off
	}
	return fmt.Sprintf("%s%c%02d'%02d'", s, sign, off/3600, off%3600/60)
}

// exifDate is a PDF date string as ExifTool prints it.
func exifDate(s string) (string, bool) {
	t, err := parseMetadataDate(s)
	if err != nil {
		return "", false
	}
	out := t.Format("2006:01:02 15:04:05")
	if m := metadataDate.FindStringSubmatch(strings.TrimSpace(s)); m != nil && m[7] == "Z" {
		return out + "Z", true
	} else if m != nil && m[7] == "" {
		return out, true
	}
	return out + t.Format("-07:00"), true
}
