package gotenberg

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"

	"github.com/google/uuid"

	"github.com/pdfexport/pdfexport/internal/storage"
)

// A conversion's PDF-engine steps travel in its delivery task as the form
// they were read from: its fields, and its mark and embed files stored in
// the spool beside the output. The delivery reads the steps from them
// again once the export is done, so a restart of bin/api between the 204
// and the delivery loses neither the conversion nor its steps. The form
// was checked before the 204; the delivery reads the same form.

// hookSteps is a conversion's form, as far as its steps read it.
type hookSteps struct {
	Fields map[string][]string `json:"fields"`
	Files  []spooledFile       `json:"files,omitempty"`
}

// spooledFile is one mark or embed file of the form, stored under Key.
type spooledFile struct {
	Field string `json:"field"`
	Name  string `json:"name"`
	Key   string `json:"key"`
}

// spoolSteps stores f's mark and embed files in the spool and returns the
// record of f's steps.
func (h *handler) spoolSteps(ctx context.Context, f *form) (*hookSteps, error) {
	s := &hookSteps{Fields: maps.Clone(f.all)}
	dir := spoolPrefix + uuid.NewString() + "/in/"
	put := func(field string, u upload) error {
		key := dir + fmt.Sprint(len(s.Files)) + "/" + u.name
		if _, err := h.cfg.Spool.Create(ctx, key, bytes.NewReader(u.data), storage.PutOptions{ContentType: "application/octet-stream", FileName: u.name}); err != nil {
			return fmt.Errorf("storing %s of %s: %w", u.name, field, err)
		}
		s.Files = append(s.Files, spooledFile{Field: field, Name: u.name, Key: key})
		return nil
	}
	err := func() error {
		for _, field := range slices.Sorted(maps.Keys(f.marks)) {
			for _, u := range f.marks[field] {
				if err := put(field, u); err != nil {
					return err
				}
			}
		}
		for _, u := range f.embeds {
			if err := put(embedsField, u); err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		h.dropFolder(ctx, dir) // the files stored before the failure
		return nil, err
	}
	return s, nil
}

// steps reads the steps again from the stored form: the form as readForm
// left it, a field's value its last.
func (h *handler) steps(ctx context.Context, s *hookSteps) ([]postStep, error) {
	f := &form{values: map[string]string{}, all: map[string][]string{}, marks: map[string][]upload{}}
	for name, vs := range s.Fields {
		if len(vs) > 0 {
			f.all[name], f.values[name] = slices.Clone(vs), vs[len(vs)-1]
		}
	}
	for _, sf := range s.Files {
		// The form's own check, again: the task names the file.
		if name, err := baseName(sf.Name); err != nil || name != sf.Name {
			return nil, badRequest("Invalid form data: the file name '%s' is not a usable file name", printable(sf.Name))
		}
		data, err := h.readSpooled(ctx, sf.Key)
		if err != nil {
			return nil, err
		}
		u := upload{name: sf.Name, data: data}
		if sf.Field == embedsField {
			f.embeds = append(f.embeds, u)
		} else {
			f.marks[sf.Field] = append(f.marks[sf.Field], u)
		}
	}
	steps := postSteps(f)
	if err := f.err(); err != nil {
		return nil, err
	}
	return steps, nil
}

// readSpooled reads a spooled input, at most the form's size.
func (h *handler) readSpooled(ctx context.Context, key string) ([]byte, error) {
	body, err := h.cfg.Store.Open(ctx, key)
	if err != nil {
		return nil, &httpError{status: http.StatusServiceUnavailable, msg: "storage unavailable"}
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, h.formLimits.bytes+1))
	if err != nil {
		return nil, &httpError{status: http.StatusServiceUnavailable, msg: "storage unavailable"}
	}
	if int64(len(data)) > h.formLimits.bytes {
		return nil, fmt.Errorf("spooled file %s: over the form's %d bytes", key, h.formLimits.bytes)
	}
	return data, nil
}
