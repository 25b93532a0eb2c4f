package assemble

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"syscall"
)

// This file reads the PDFs Chromium prints (Skia's writer): a classic
// cross-reference table, no object or cross-reference streams, every object
// reachable by its offset. It parses one object at a time from the file
// mapped into memory, so reading a chapter costs the heap its largest
// dictionary takes, never its content: stream data stays in the mapping
// (the page cache) and is copied from there.

// ErrUnsupported: the PDF uses a feature this reader does not read (a
// cross-reference stream, an object stream). Chromium never writes one.
var ErrUnsupported = errors.New("assemble: unsupported PDF")

// ErrMalformed: the PDF cannot be parsed.
var ErrMalformed = errors.New("assemble: malformed PDF")

// value is a parsed PDF object: name, str, ref, number, keyword (true,
// false, null), array or *dict.
type value any

type (
	// name is a PDF name as written, without the slash (#xx escapes kept).
	name string
	// str is a string object as written, delimiters included: written
	// back byte for byte.
	str []byte
	// number is a numeric token as written.
	number string
	// keyword is true, false or null.
	keyword string
	array   []value
	ref     struct{ num, gen int }
)

// dict keeps its keys' order, so what is copied reads as it was written.
type dict struct {
	keys []name
	vals []value
}

func (d *dict) get(k name) value {
	if d == nil {
		return nil
	}
	for i, key := range d.keys {
		if key == k {
			return d.vals[i]
		}
	}
	return nil
}

func (d *dict) set(k name, v value) {
	for i, key := range d.keys {
		if key == k {
			d.vals[i] = v
			return
		}
	}
	d.keys = append(d.keys, k)
	d.vals = append(d.vals, v)
}

func (d *dict) del(k name) {
	for i, key := range d.keys {
		if key == k {
			d.keys = append(d.keys[:i:i], d.keys[i+1:]...)
			d.vals = append(d.vals[:i:i], d.vals[i+1:]...)
			return
		}
	}
}

func (n number) float() float64 {
	f, _ := strconv.ParseFloat(string(n), 64)
	return f
}

// text decodes a string object: literal escapes, hex, and UTF-16BE with a
// byte order mark, as PDF text strings are written. PDFDocEncoding is read
// as Latin-1, which it is for every printable ASCII character.
func (s str) text() string {
	b := s.bytes()
	if len(b) >= 2 && b[0] == 0xfe && b[1] == 0xff {
		r := make([]rune, 0, len(b)/2)
		for i := 2; i+1 < len(b); i += 2 {
			c := rune(b[i])<<8 | rune(b[i+1])
			if c >= 0xd800 && c < 0xdc00 && i+3 < len(b) {
				lo := rune(b[i+2])<<8 | rune(b[i+3])
				c = (c-0xd800)<<10 + (lo - 0xdc00) + 0x10000
				i += 2
			}
			r = append(r, c)
		}
		return string(r)
	}
	if len(b) >= 3 && b[0] == 0xef && b[1] == 0xbb && b[2] == 0xbf {
		return string(b[3:])
	}
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

// bytes decodes a string object into the bytes it stands for.
func (s str) bytes() []byte {
	if len(s) < 2 {
		return nil
	}
	if s[0] == '<' {
		var out []byte
		var hi int = -1
		for _, c := range s[1 : len(s)-1] {
			v := unhex(c)
			if v < 0 {
				continue
			}
			if hi < 0 {
				hi = v
			} else {
				out = append(out, byte(hi<<4|v))
				hi = -1
			}
		}
		if hi >= 0 {
			out = append(out, byte(hi<<4))
		}
		return out
	}
	in := s[1 : len(s)-1]
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c != '\\' || i+1 == len(in) {
			out = append(out, c)
			continue
		}
		i++
		switch c = in[i]; c {
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case '\r':
			if i+1 < len(in) && in[i+1] == '\n' {
				i++
			}
		case '\n':
		default:
			if c >= '0' && c <= '7' {
				v := 0
				for j := 0; j < 3 && i < len(in) && in[i] >= '0' && in[i] <= '7'; j++ {
					v = v*8 + int(in[i]-'0')
					i++
				}
				i--
				out = append(out, byte(v))
			} else {
				out = append(out, c)
			}
		}
	}
	return out
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// textString encodes s as a PDF text string: UTF-16BE with a byte order
// mark, in hex, which needs no escaping.
func textString(s string) str {
	var b bytes.Buffer
	b.WriteString("<FEFF")
	for _, r := range s {
		if r > 0xffff {
			r -= 0x10000
			fmt.Fprintf(&b, "%04X%04X", 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			continue
		}
		fmt.Fprintf(&b, "%04X", r)
	}
	b.WriteByte('>')
	return str(b.Bytes())
}

// object is an indirect object as read: its value and, for a stream, where
// its data lies in the file.
type object struct {
	val        value
	streamAt   int64 // offset of the stream's data; -1 when not a stream
	streamSize int64
}

// reader reads the objects of one PDF file by number, from the file mapped
// into memory: a part's pages and annotations are thousands of small
// objects, and a read each from the file cost more than parsing them. The
// mapping is the page cache's, not the heap's; nothing read from it
// outlives Close (the lexer copies what it returns).
type reader struct {
	data    []byte // the file, mapped read-only
	size    int64
	offsets []int64 // by object number; 0: free or absent
	trailer *dict
	stacks  stacks
}

// mapFile maps the file at path read-only. The files are a manual's
// own: its chapters downloaded into its private directory and the table
// of contents and overlay printed there, which nothing writes while they
// are mapped (a file cut short under its mapping would fault the reader).
func mapFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the mapping outlives the descriptor
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() == 0 {
		return nil, fmt.Errorf("%w: an empty file", ErrMalformed)
	}
	if st.Size() != int64(int(st.Size())) {
		return nil, fmt.Errorf("%w: a file of %d bytes", ErrUnsupported, st.Size())
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", path, err)
	}
	return data, nil
}

func openPDF(path string) (*reader, error) {
	data, err := mapFile(path)
	if err != nil {
		return nil, err
	}
	r := &reader{data: data, size: int64(len(data))}
	if err := r.init(); err != nil {
		r.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

func (r *reader) Close() error {
	data := r.data
	r.data = nil
	if data == nil {
		return nil
	}
	return syscall.Munmap(data)
}

// section is the file's data of size bytes at offset at.
func (r *reader) section(at, size int64) []byte { return r.data[at : at+size : at+size] }

// xref is what openPDF reads of a file's cross-reference sections.
type xref struct {
	size    int64
	offsets []int64
	trailer *dict
}

func (r *reader) xref() xref { return xref{r.size, r.offsets, r.trailer} }

// reopenPDF opens a file that openPDF read before, with what it read of
// its cross-reference (x, unless empty), unless the file's size changed
// since.
func reopenPDF(path string, x xref) (*reader, error) {
	if x.offsets == nil {
		return openPDF(path)
	}
	data, err := mapFile(path)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) != x.size {
		_ = syscall.Munmap(data)
		return openPDF(path)
	}
	return &reader{data: data, size: x.size, offsets: x.offsets, trailer: x.trailer}, nil
}

func (r *reader) init() error {
	tail := min(int64(1024), r.size)
	buf := r.data[r.size-tail:]
	i := bytes.LastIndex(buf, []byte("startxref"))
	if i < 0 {
		return fmt.Errorf("%w: no startxref", ErrMalformed)
	}
	lx := newLexer(buf[i+len("startxref"):])
	tok, err := lx.token()
	if err != nil {
		return fmt.Errorf("%w: startxref: %v", ErrMalformed, err)
	}
	at, err := strconv.ParseInt(string(tok), 10, 64)
	if err != nil || at <= 0 || at >= r.size {
		return fmt.Errorf("%w: startxref %q", ErrMalformed, tok)
	}
	seen := map[int64]bool{}
	for at > 0 && !seen[at] {
		seen[at] = true
		trailer, err := r.readXref(at)
		if err != nil {
			return err
		}
		if r.trailer == nil {
			r.trailer = trailer
		}
		prev, ok := trailer.get("Prev").(number)
		if !ok {
			break
		}
		at, _ = strconv.ParseInt(string(prev), 10, 64)
	}
	if _, ok := r.trailer.get("Root").(ref); !ok {
		return fmt.Errorf("%w: trailer has no /Root", ErrMalformed)
	}
	return nil
}

// readXref reads one cross-reference section at offset at; entries already
// known (from a newer section) are kept.
func (r *reader) readXref(at int64) (*dict, error) {
	lx := newLexer(r.data[at:])
	tok, err := lx.token()
	if err != nil {
		return nil, fmt.Errorf("%w: cross-reference table: %v", ErrMalformed, err)
	}
	if string(tok) != "xref" {
		return nil, fmt.Errorf("%w: a cross-reference stream (only tables are read)", ErrUnsupported)
	}
	for {
		tok, err := lx.token()
		if err != nil {
			return nil, fmt.Errorf("%w: cross-reference table: %v", ErrMalformed, err)
		}
		if string(tok) == "trailer" {
			v, err := lx.value()
			if err != nil {
				return nil, fmt.Errorf("%w: trailer: %v", ErrMalformed, err)
			}
			d, ok := v.(*dict)
			if !ok {
				return nil, fmt.Errorf("%w: trailer is not a dictionary", ErrMalformed)
			}
			return d, nil
		}
		first, err1 := strconv.Atoi(string(tok))
		ctok, err2 := lx.token()
		count, err3 := strconv.Atoi(string(ctok))
		// Each entry takes 20 bytes of the file: a count the file cannot
		// hold is a lie that would only cost memory.
		if err1 != nil || err2 != nil || err3 != nil || first < 0 || count < 0 || int64(first+count) > r.size/20+1 {
			return nil, fmt.Errorf("%w: cross-reference subsection %q", ErrMalformed, tok)
		}
		if need := first + count; need > len(r.offsets) {
			grown := make([]int64, need)
			copy(grown, r.offsets)
			r.offsets = grown
		}
		for i := 0; i < count; i++ {
			off, err1 := lx.token()
			_, err2 := lx.token()
			kind, err3 := lx.token()
			if err := errors.Join(err1, err2, err3); err != nil {
				return nil, fmt.Errorf("%w: cross-reference entry: %v", ErrMalformed, err)
			}
			n := first + i
			if r.offsets[n] != 0 || string(kind) != "n" {
				continue
			}
			o, err := strconv.ParseInt(string(off), 10, 64)
			if err != nil || o <= 0 || o >= r.size {
				return nil, fmt.Errorf("%w: cross-reference entry %d: offset %q", ErrMalformed, n, off)
			}
			r.offsets[n] = o
		}
	}
}

// object reads indirect object n.
func (r *reader) object(n int) (object, error) { return r.readObject(n, true) }

// readObject reads object n; with streams false it does not look for a
// stream after a dictionary, so a stream's indirect /Length is read
// without reading another stream's (whose /Length could point back).
func (r *reader) readObject(n int, streams bool) (object, error) {
	if n <= 0 || n >= len(r.offsets) || r.offsets[n] == 0 {
		return object{val: keyword("null"), streamAt: -1}, nil // a reference to a free object is null
	}
	at := r.offsets[n]
	lx := lexer{b: r.data[at:], stacks: r.stacks}
	lx.peeked = lx.peeked[:0] // what the last object's lexer looked ahead at is not this one's
	num, err1 := lx.token()
	_, err2 := lx.token()
	obj, err3 := lx.token()
	if err := errors.Join(err1, err2, err3); err != nil || string(obj) != "obj" || !isNumberOf(num, n) {
		if err == nil {
			err = fmt.Errorf("expected %d 0 obj, found %q %q", n, num, obj)
		}
		return object{}, fmt.Errorf("%w: object %d: %v", ErrMalformed, n, err)
	}
	v, err := lx.value()
	r.stacks = lx.stacks // grown, for the next object
	if err != nil {
		return object{}, fmt.Errorf("%w: object %d: %v", ErrMalformed, n, err)
	}
	o := object{val: v, streamAt: -1}
	d, isDict := v.(*dict)
	if !isDict || !streams {
		return o, nil
	}
	tok, err := lx.token()
	if err != nil || string(tok) != "stream" {
		return o, nil
	}
	// The data starts after the end of line that follows the keyword.
	c, err := lx.readByte()
	if err == nil && c == '\r' {
		c, err = lx.readByte()
	}
	if err != nil || c != '\n' {
		return object{}, fmt.Errorf("%w: object %d: no end of line after stream", ErrMalformed, n)
	}
	o.streamAt = at + int64(lx.pos)
	lv := d.get("Length")
	if lr, ok := lv.(ref); ok {
		lo, err := r.readObject(lr.num, false)
		if err != nil {
			return object{}, err
		}
		lv = lo.val
	}
	length, err := r.intValue(lv)
	if err != nil || length < 0 || o.streamAt+length > r.size {
		return object{}, fmt.Errorf("%w: object %d: stream /Length", ErrMalformed, n)
	}
	o.streamSize = length
	return o, nil
}

// isNumberOf reports whether tok is n as written in an object's header.
func isNumberOf(tok []byte, n int) bool {
	var buf [20]byte
	return bytes.Equal(tok, strconv.AppendInt(buf[:0], int64(n), 10))
}

// resolve follows a reference; other values are returned as they are.
func (r *reader) resolve(v value) (value, error) {
	for i := 0; i < 8; i++ {
		rf, ok := v.(ref)
		if !ok {
			return v, nil
		}
		o, err := r.object(rf.num)
		if err != nil {
			return nil, err
		}
		v = o.val
	}
	return nil, fmt.Errorf("%w: a chain of references", ErrMalformed)
}

func (r *reader) dict(v value) (*dict, error) {
	v, err := r.resolve(v)
	if err != nil {
		return nil, err
	}
	d, _ := v.(*dict)
	return d, nil
}

func (r *reader) array(v value) (array, error) {
	v, err := r.resolve(v)
	if err != nil {
		return nil, err
	}
	a, _ := v.(array)
	return a, nil
}

func (r *reader) intValue(v value) (int64, error) {
	v, err := r.resolve(v)
	if err != nil {
		return 0, err
	}
	n, ok := v.(number)
	if !ok {
		return 0, fmt.Errorf("%w: not a number", ErrMalformed)
	}
	return strconv.ParseInt(string(n), 10, 64)
}

// lexer splits PDF syntax into tokens and values. Its tokens are slices of
// b, valid only while b is; the values it makes are copies.
type lexer struct {
	b   []byte
	pos int // bytes consumed
	stacks
}

// stacks hold the entries of the dictionaries and arrays a lexer is
// reading; a reader keeps them from one object to the next.
type stacks struct {
	peeked [][]byte
	keys   []name
	vals   []value
	items  []value
}

// common are values read over and over, boxed once: the names of
// Chromium's pages, links and fonts, and the keywords, by their tokens.
var common = func() map[string]value {
	m := map[string]value{"true": keyword("true"), "false": keyword("false"), "null": keyword("null")}
	for _, n := range []name{"Type", "Subtype", "Annot", "Link", "Rect", "Border", "A", "S", "URI", "F",
		"Dest", "XYZ", "GoTo", "Page", "Pages", "Parent", "Kids", "Count", "MediaBox", "CropBox", "Resources",
		"Contents", "Font", "XObject", "ExtGState", "Pattern", "Shading", "ColorSpace", "ProcSet", "PDF", "Text",
		"ImageB", "ImageC", "ImageI", "Length", "Filter", "FlateDecode", "DCTDecode", "StructParents", "StructParent",
		"Annots", "Group", "Transparency", "CS", "DeviceRGB", "BaseFont", "FontDescriptor", "Encoding", "ToUnicode",
		"DescendantFonts", "CIDToGIDMap", "Identity", "Identity-H", "W", "Width", "Height", "BitsPerComponent",
		"Image", "Form", "BBox", "SMask", "Decode", "DecodeParms", "Predictor", "Colors", "Columns",
		"K", "P", "Pg", "Obj", "OBJR", "StructElem", "MCID", "Span", "Figure", "Alt", "ActualText"} {
		m["/"+string(n)] = n
	}
	return m
}()

// nameOf is the name a token (its slash included) writes.
func nameOf(tok []byte) name {
	if v, ok := common[string(tok)]; ok {
		return v.(name)
	}
	return name(tok[1:])
}

func newLexer(b []byte) *lexer { return &lexer{b: b} }

func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' || c == 0
}

func isDelim(c byte) bool {
	switch c {
	case '(', ')', '<', '>', '[', ']', '{', '}', '/', '%':
		return true
	}
	return false
}

func (l *lexer) readByte() (byte, error) {
	if l.pos >= len(l.b) {
		return 0, io.EOF
	}
	c := l.b[l.pos]
	l.pos++
	return c, nil
}

// maxToken bounds one token (a string, a name, a number), so a hostile
// file cannot make one value hold much of it.
const maxToken = 1 << 20

// token returns the next token: a delimiter ("<<", ">>", "[", "]"), a whole
// string "(...)" or "<...>", a name "/X", or a run of regular characters.
func (l *lexer) token() ([]byte, error) {
	if n := len(l.peeked); n > 0 {
		t := l.peeked[n-1]
		l.peeked = l.peeked[:n-1]
		return t, nil
	}
	b := l.b
	start := skipSpace(b, l.pos)
	if start >= len(b) {
		l.pos = start
		return nil, io.EOF
	}
	switch b[start] {
	case '[', ']', '{', '}':
		l.pos = start + 1
		return b[start:l.pos], nil
	case '<', '>':
		return l.angleToken(start)
	case '(':
		return l.literalString(start)
	}
	i := start + 1
	for i < len(b) && !isSpace(b[i]) && !isDelim(b[i]) {
		i++
		if i-start > maxToken {
			return nil, fmt.Errorf("token longer than %d bytes", maxToken)
		}
	}
	l.pos = i
	return b[start:i], nil
}

// skipSpace returns the index of the first byte at or after i that is
// neither white space nor in a comment, len(b) if none.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		c := b[i]
		if c == '%' {
			for i < len(b) && b[i] != '\n' && b[i] != '\r' {
				i++
			}
			continue
		}
		if !isSpace(c) {
			break
		}
		i++
	}
	return i
}

// angleToken reads the token that starts with '<' or '>' at start: "<<",
// ">>", a lone ">", or a hex string "<...>".
func (l *lexer) angleToken(start int) ([]byte, error) {
	b := l.b
	c := b[start]
	i := start + 1
	if i < len(b) && b[i] == c {
		l.pos = i + 1
		return b[start : i+1], nil
	}
	if c == '>' {
		l.pos = i
		return b[start:i], nil
	}
	end := bytes.IndexByte(b[i:], '>')
	if end < 0 {
		l.pos = len(b)
		return nil, io.ErrUnexpectedEOF
	}
	if end+2 > maxToken {
		return nil, fmt.Errorf("hex string longer than %d bytes", maxToken)
	}
	l.pos = i + end + 1
	return b[start:l.pos], nil
}

// literalString reads the string "(...)" that starts at start, its
// balanced parentheses and escapes kept.
func (l *lexer) literalString(start int) ([]byte, error) {
	b := l.b
	i := start + 1
	depth := 1
	for depth > 0 {
		if i >= len(b) {
			l.pos = i
			return nil, io.ErrUnexpectedEOF
		}
		switch b[i] {
		case '\\':
			i++
			if i >= len(b) {
				l.pos = i
				return nil, io.ErrUnexpectedEOF
			}
		case '(':
			depth++
		case ')':
			depth--
		}
		i++
		if i-start > maxToken {
			return nil, fmt.Errorf("string longer than %d bytes", maxToken)
		}
	}
	l.pos = i
	return b[start:i], nil
}

func (l *lexer) push(t []byte) { l.peeked = append(l.peeked, t) }

// maxDepth bounds nesting, so a hostile file cannot exhaust the stack.
const maxDepth = 64

func (l *lexer) value() (value, error) { return l.valueAt(0) }

// valueAt reads the next value, nested depth deep.
func (l *lexer) valueAt(depth int) (value, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxDepth)
	}
	tok, err := l.token()
	if err != nil {
		return nil, err
	}
	switch {
	case string(tok) == "<<":
		return l.dictAt(depth)
	case string(tok) == "[":
		return l.arrayAt(depth)
	case tok[0] == '/':
		if v, ok := common[string(tok)]; ok {
			return v, nil
		}
		return name(tok[1:]), nil
	case tok[0] == '(' || tok[0] == '<':
		return str(bytes.Clone(tok)), nil
	case string(tok) == "true" || string(tok) == "false" || string(tok) == "null":
		return common[string(tok)], nil
	case isInteger(tok):
		return l.integerOrRef(tok), nil
	case isNumber(tok):
		return number(tok), nil
	}
	return nil, fmt.Errorf("unexpected token %q", tok)
}

// dictAt reads the entries of a dictionary whose "<<" was read, up to its
// ">>".
func (l *lexer) dictAt(depth int) (value, error) {
	// The entries gather on the lexer's stacks and are copied into
	// slices of their exact size: most dictionaries are small, and
	// growing them entry by entry cost more than reading them.
	mark := len(l.keys)
	defer func() { l.keys, l.vals = l.keys[:mark], l.vals[:mark] }()
	for {
		k, err := l.token()
		if err != nil {
			return nil, err
		}
		if string(k) == ">>" {
			d := &dict{keys: slices.Clone(l.keys[mark:]), vals: slices.Clone(l.vals[mark:])}
			return d, nil
		}
		if len(k) == 0 || k[0] != '/' {
			return nil, fmt.Errorf("dictionary key %q is not a name", k)
		}
		v, err := l.valueAt(depth + 1)
		if err != nil {
			return nil, err
		}
		l.keys = append(l.keys, nameOf(k))
		l.vals = append(l.vals, v)
	}
}

// arrayAt reads the items of an array whose "[" was read, up to its "]".
func (l *lexer) arrayAt(depth int) (value, error) {
	mark := len(l.items)
	defer func() { l.items = l.items[:mark] }()
	for {
		t, err := l.token()
		if err != nil {
			return nil, err
		}
		if string(t) == "]" {
			return array(append(make([]value, 0, len(l.items)-mark), l.items[mark:]...)), nil
		}
		l.push(t)
		v, err := l.valueAt(depth + 1)
		if err != nil {
			return nil, err
		}
		l.items = append(l.items, v)
	}
}

// integerOrRef reads what the integer tok starts: "N G R" is a
// reference; anything else leaves N a number.
func (l *lexer) integerOrRef(tok []byte) value {
	t2, err := l.token()
	if err != nil {
		return number(tok)
	}
	if !isInteger(t2) {
		l.push(t2)
		return number(tok)
	}
	t3, err := l.token()
	if err != nil || string(t3) != "R" {
		if err == nil {
			l.push(t3)
		}
		l.push(t2)
		return number(tok)
	}
	num, _ := strconv.Atoi(string(tok))
	gen, _ := strconv.Atoi(string(t2))
	return ref{num, gen}
}

func isInteger(t []byte) bool {
	if len(t) == 0 || len(t) > 10 {
		return false
	}
	for _, c := range t {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func isNumber(t []byte) bool {
	if len(t) == 0 {
		return false
	}
	_, err := strconv.ParseFloat(string(t), 64)
	return err == nil
}
