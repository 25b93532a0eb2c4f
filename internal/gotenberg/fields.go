package gotenberg

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// form is a multipart form as read by readForm: the fields' values and the
// uploaded files. Its accessors parse a field as Gotenberg does and collect
// every invalid one, so the answer names them all at once.
type form struct {
	values map[string]string
	// all are every value of each field, in the order sent: a repeated
	// field (stampSource) is a list.
	all    map[string][]string
	files  []upload
	embeds []upload // the files of the embeds field (embed.go)
	// marks are the files of the stamp and watermark fields, by field.
	marks map[string][]upload
	errs  []string
	// fault answers the form on its own, in Gotenberg's words, when no
	// field is invalid (metadata it cannot write).
	fault error
	// read are the fields a route asked for, present or not: the fields
	// it supports, which the contract (api/gotenberg.yaml) must list.
	read map[string]bool
	// buckets are the form buckets of downloaded files other than the
	// route's own (download.go), by file name.
	buckets map[string]string
}

// upload is one uploaded file: its base name and bytes.
type upload struct {
	name string
	data []byte
}

// maxEcho bounds how much of an invalid value an error message repeats.
const maxEcho = 120

func (f *form) invalid(key, got string, why error) {
	if len(got) > maxEcho {
		got = strings.ToValidUTF8(got[:maxEcho], "") + "…"
	}
	f.errs = append(f.errs, fmt.Sprintf("form field '%s' is invalid (got '%s', resulting to %v)", key, got, why))
}

// err is the form's invalid fields as Gotenberg words them, or nil.
func (f *form) err() error {
	if len(f.errs) == 0 {
		return f.fault
	}
	return badRequest("Invalid form data: %s", strings.Join(f.errs, "\n"))
}

// value is the field's value, "" when it was not sent.
func (f *form) value(key string) string {
	f.mark(key)
	return strings.TrimSpace(f.values[key])
}

func (f *form) mark(key string) {
	if f.read == nil {
		f.read = map[string]bool{}
	}
	f.read[key] = true
}

func (f *form) has(key string) bool { return f.value(key) != "" }

func (f *form) bool(key string, def bool) bool {
	v := f.value(key)
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		f.invalid(key, v, err)
		return def
	}
	return b
}

func (f *form) float(key string, def float64) float64 {
	v := f.value(key)
	if v == "" {
		return def
	}
	n, err := strconv.ParseFloat(v, 64)
	if err == nil && (math.IsNaN(n) || math.IsInf(n, 0)) {
		err = errors.New("not a finite number")
	}
	if err != nil {
		f.invalid(key, v, err)
		return def
	}
	return n
}

// perInch are the length units Gotenberg's size fields take, in units
// per inch; a bare number is inches.
var perInch = map[string]float64{"in": 1, "pt": 72, "px": 96, "mm": 25.4, "cm": 2.54, "pc": 6}

// inches parses a length such as "8.5", "1in", "10mm", "72pt" into inches.
func (f *form) inches(key string, def float64) float64 {
	v := f.value(key)
	if v == "" {
		return def
	}
	n, err := parseInches(v)
	if err != nil {
		f.invalid(key, v, err)
		return def
	}
	return n
}

func parseInches(v string) (float64, error) {
	num, div := v, 1.0
	if len(v) > 2 {
		if d, ok := perInch[strings.ToLower(v[len(v)-2:])]; ok {
			num, div = strings.TrimSpace(v[:len(v)-2]), d
		}
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(n) || math.IsInf(n, 0) || n < 0 {
		return 0, errors.New("must be a finite length of 0 or more, in in, mm, cm, pt, px or pc")
	}
	return n / div, nil
}

// duration parses a Go duration such as "2.5s" or "500ms".
func (f *form) duration(key string) time.Duration {
	v := f.value(key)
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err == nil && d < 0 {
		err = errors.New("must not be negative")
	}
	if err != nil {
		f.invalid(key, v, err)
		return 0
	}
	return d
}

// json decodes a JSON field into target and reports whether it was sent
// and valid.
func (f *form) json(key string, target any) bool {
	v := f.value(key)
	if v == "" {
		return false
	}
	if err := json.Unmarshal([]byte(v), target); err != nil {
		f.invalid(key, v, fmt.Errorf("unmarshal %s: %w", key, err))
		return false
	}
	return true
}

// oneOf checks that the field is empty or one of the values.
func (f *form) oneOf(key string, allowed ...string) string {
	v := f.value(key)
	if v == "" {
		return ""
	}
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	f.invalid(key, v, fmt.Errorf("wrong value, expected either '%s' or empty", strings.Join(allowed, "', '")))
	return ""
}

// text checks a free-text field: valid UTF-8 (the bounds are readForm's).
func (f *form) text(key string) string {
	f.mark(key)
	v := f.values[key]
	if !utf8.ValidString(v) {
		f.invalid(key, "", errors.New("not valid UTF-8"))
		return ""
	}
	return v
}

// file is the uploaded file of that name, if any.
func (f *form) file(name string) (upload, bool) {
	for _, u := range f.files {
		if u.name == name {
			return u, true
		}
	}
	return upload{}, false
}

// list is every value of the field, in the order sent.
func (f *form) list(key string) []string {
	f.mark(key)
	return f.all[key]
}
