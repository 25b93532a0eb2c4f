package gotenberg

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode"
)

// limits bound what one form may carry: its bytes in all, its parts, and
// each field's value. Everything in a form is the caller's, so nothing is
// read past them.
type limits struct {
	bytes      int64 // the whole body
	parts      int   // fields and files
	valueBytes int   // one field's value
}

// readForm reads the multipart body of r within lim, in memory: file names
// are reduced to safe base names, a duplicate file name is refused.
func readForm(w http.ResponseWriter, r *http.Request, lim limits) (*form, error) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, badRequest("Invalid form data: the request's Content-Type must be multipart/form-data with a boundary")
	}
	r.Body = http.MaxBytesReader(w, r.Body, lim.bytes)
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, badRequest("Invalid form data: %v", err)
	}
	f := &form{values: map[string]string{}, all: map[string][]string{}, marks: map[string][]upload{}}
	for n := 0; ; n++ {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return f, nil
		}
		if err != nil {
			return nil, formReadErr(err, lim)
		}
		if n >= lim.parts {
			return nil, &httpError{status: http.StatusRequestEntityTooLarge,
				msg: fmt.Sprintf("Invalid form data: more than %d fields and files", lim.parts)}
		}
		if p.FileName() != "" {
			name, err := baseName(p.FileName())
			if err != nil {
				return nil, err
			}
			field := p.FormName()
			if field == embedsField {
				if err := f.readEmbed(p, name, lim); err != nil {
					return nil, err
				}
				continue
			}
			if _, dup := f.file(name); dup && !markFields[field] {
				return nil, badRequest("Invalid form data: the file '%s' is sent twice", name)
			}
			data, err := io.ReadAll(p)
			if err != nil {
				return nil, formReadErr(err, lim)
			}
			u := upload{name: name, data: data}
			if markFields[field] {
				// A stamp or watermark is found by its field, in order, and
				// is no document or asset: it may share an asset's name.
				f.marks[field] = append(f.marks[field], u)
				continue
			}
			f.files = append(f.files, u)
			continue
		}
		key := p.FormName()
		v, err := io.ReadAll(io.LimitReader(p, int64(lim.valueBytes)+1))
		if err != nil {
			return nil, formReadErr(err, lim)
		}
		if len(v) > lim.valueBytes {
			return nil, &httpError{status: http.StatusRequestEntityTooLarge,
				msg: fmt.Sprintf("Invalid form data: form field '%s' is longer than %d bytes", printable(key), lim.valueBytes)}
		}
		f.values[key] = string(v)
		f.all[key] = append(f.all[key], string(v))
	}
}

func formReadErr(err error, lim limits) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return &httpError{status: http.StatusRequestEntityTooLarge,
			msg: fmt.Sprintf("Invalid form data: the request is larger than %d bytes", lim.bytes)}
	}
	return badRequest("Invalid form data: %v", err)
}

// maxNameBytes bounds an uploaded file's name.
const maxNameBytes = 255

// baseName is the file name a client sent, without any directory: a name
// is never a path here (the worker gets no files, only the document they
// are inlined into), but a name that tries to be one, or holds control
// characters, is refused rather than guessed at.
func baseName(raw string) (string, error) {
	name := raw
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	ok := name != "" && name != "." && name != ".." && len(name) <= maxNameBytes
	for _, r := range name {
		if !unicode.IsPrint(r) {
			ok = false
		}
	}
	if !ok {
		return "", badRequest("Invalid form data: the file name '%s' is not a usable file name", printable(raw))
	}
	return name, nil
}

// printable is s for an error message: control characters dropped, bounded.
func printable(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return -1
	}, s)
	if len(s) > maxEcho {
		s = strings.ToValidUTF8(s[:maxEcho], "") + "…"
	}
	return s
}
