package gotenberg

import (
	"errors"
	"strings"

	"github.com/pdfexport/pdfexport/internal/assemble/engine"
)

// metadataRefused is Gotenberg's answer to metadata it cannot write.
const metadataRefused = "The requested metadata could not be written; ensure values are valid and free of control characters."

// engineErr is an engine operation's error on the file name as the
// answer: the caller's input is a 400 naming what is wrong, anything
// else the server's.
func engineErr(name string, err error) error {
	var me *engine.MetadataError
	if errors.As(err, &me) {
		return badRequest("%s", metadataMessage(me))
	}
	var ie *engine.InputError
	if errors.As(err, &ie) {
		if ie.File != "" {
			name = ie.File
		}
		return badRequest("The PDF '%s' could not be processed: %v", printable(name), ie.Err)
	}
	return err
}

// metadataMessage is Gotenberg's text with every refused key named.
func metadataMessage(me *engine.MetadataError) string {
	parts := make([]string, len(me.Keys))
	for i, k := range me.Keys {
		parts[i] = "'" + printable(k.Key) + "' (" + k.Why + ")"
	}
	return metadataRefused + " Refused keys: " + strings.Join(parts, ", ")
}

// eachPDF runs op on every file, keeping its name.
func eachPDF(files []upload, op func(data []byte) ([]byte, error)) ([]upload, error) {
	out := make([]upload, 0, len(files))
	for _, u := range files {
		data, err := op(u.data)
		if err != nil {
			return nil, engineErr(u.name, err)
		}
		out = append(out, upload{name: u.name, data: data})
	}
	return out, nil
}
