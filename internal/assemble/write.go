package assemble

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
)

// writer writes a PDF object by object and its cross-reference table at
// the end: it holds the offset of each object written, nothing else.
type writer struct {
	w       *bufio.Writer
	n       int64
	offsets []int64 // by object number; index 0 unused
}

func newWriter(w io.Writer) (*writer, error) {
	pw := &writer{w: bufio.NewWriterSize(w, 256<<10), offsets: []int64{0}}
	// The binary comment tells transfer tools the file is not text.
	_, err := pw.write([]byte("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n"))
	return pw, err
}

func (w *writer) write(b []byte) (int, error) {
	n, err := w.w.Write(b)
	w.n += int64(n)
	return n, err
}

func (w *writer) writeString(s string) error {
	n, err := w.w.WriteString(s)
	w.n += int64(n)
	return err
}

// alloc reserves the next object number.
func (w *writer) alloc() int {
	w.offsets = append(w.offsets, 0)
	return len(w.offsets) - 1
}

// object writes object num with value v.
func (w *writer) object(num int, v value) error {
	return w.begin(num, v, func() error { return w.writeString("\nendobj\n") })
}

// stream writes object num, a stream whose dictionary is d and whose data
// is data.
func (w *writer) stream(num int, d *dict, data []byte) error {
	d.set("Length", number(strconv.Itoa(len(data))))
	return w.begin(num, d, func() error {
		if err := w.writeString("\nstream\n"); err != nil {
			return err
		}
		if _, err := w.write(data); err != nil {
			return err
		}
		return w.writeString("\nendstream\nendobj\n")
	})
}

func (w *writer) begin(num int, v value, end func() error) error {
	if num <= 0 || num >= len(w.offsets) || w.offsets[num] != 0 {
		return fmt.Errorf("assemble: object %d written twice or never allocated", num)
	}
	w.offsets[num] = w.n
	if err := w.writeString(strconv.Itoa(num) + " 0 obj\n"); err != nil {
		return err
	}
	if err := w.value(v); err != nil {
		return err
	}
	return end()
}

func (w *writer) value(v value) error {
	var err error
	switch v := v.(type) {
	case name:
		err = w.writeString("/" + string(v))
	case str:
		_, err = w.write(v)
	case number:
		err = w.writeString(string(v))
	case keyword:
		err = w.writeString(string(v))
	case ref:
		err = w.writeString(strconv.Itoa(v.num) + " " + strconv.Itoa(v.gen) + " R")
	case array:
		err = w.writeString("[")
		for i, item := range v {
			if err == nil && i > 0 {
				err = w.writeString(" ")
			}
			if err == nil {
				err = w.value(item)
			}
		}
		if err == nil {
			err = w.writeString("]")
		}
	case *dict:
		err = w.writeString("<<")
		for i, k := range v.keys {
			if err == nil {
				err = w.writeString("/" + string(k) + " ")
			}
			if err == nil {
				err = w.value(v.vals[i])
			}
			if err == nil {
				err = w.writeString("\n")
			}
		}
		if err == nil {
			err = w.writeString(">>")
		}
	case nil:
		err = w.writeString("null")
	default:
		err = fmt.Errorf("assemble: cannot write %T", v)
	}
	return err
}

// finish writes the cross-reference table and the trailer, and flushes.
func (w *writer) finish(root, info int) error {
	for num, off := range w.offsets {
		if num > 0 && off == 0 {
			return fmt.Errorf("assemble: object %d allocated but never written", num)
		}
	}
	xref := w.n
	if err := w.writeString(fmt.Sprintf("xref\n0 %d\n0000000000 65535 f \n", len(w.offsets))); err != nil {
		return err
	}
	for _, off := range w.offsets[1:] {
		if err := w.writeString(fmt.Sprintf("%010d 00000 n \n", off)); err != nil {
			return err
		}
	}
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	trailer := &dict{}
	trailer.set("Size", number(strconv.Itoa(len(w.offsets))))
	trailer.set("Root", ref{root, 0})
	if info > 0 {
		trailer.set("Info", ref{info, 0})
	}
	hexID := str("<" + hex.EncodeToString(id) + ">")
	trailer.set("ID", array{hexID, hexID})
	if err := w.writeString("trailer\n"); err != nil {
		return err
	}
	if err := w.value(trailer); err != nil {
		return err
	}
	if err := w.writeString(fmt.Sprintf("\nstartxref\n%d\n%%%%EOF\n", xref)); err != nil {
		return err
	}
	return w.w.Flush()
}
