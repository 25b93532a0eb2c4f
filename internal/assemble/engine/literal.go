package engine

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// A literal text mark (Mark.Literal) is drawn as typed, where pdfcpu
// formats its text: %p, %P, %t and %v become the page number, the page
// count, a time stamp and pdfcpu's version, a run of k percent signs
// prints k-1 of them (and the next letter is still a directive), and the
// two characters \n break the line, with no escape for any of them. So the
// letters pdfcpu would act on reach it as stand-ins: codes of WinAnsi's
// C1 area, which a validated text never holds (one line of printable
// Latin-1), each exactly as wide in Helvetica as what it stands for, so
// that the mark is laid out as the text; restoreStandIns puts the letters
// back into the mark's content stream.
var standIns = []struct {
	in, out string // the stand-in's code(s), the letters they stand for
}{
	{"\u0086", "n"},        // dagger, 556/1000 em, as n
	{"\u0087", "p"},        // double dagger, 556, as p
	{"\u008a", "P"},        // Scaron, 667, as P
	{"\u009a", "v"},        // scaron, 500, as v
	{"\u008e\u0083", "%t"}, // Zcaron and florin, 611 + 556, as % (889) and t (278)
}

// standIn is the stand-in of out.
func standIn(out string) string {
	for _, s := range standIns {
		if s.out == out {
			return s.in
		}
	}
	panic("engine: no stand-in for " + out)
}

// literalText is what pdfcpu gets for the literal text t, and whether it
// holds stand-ins for restoreStandIns.
func literalText(t string) (string, bool) {
	var b strings.Builder
	stood := false
	percents := func(m int) { // pdfcpu prints m of m+1
		if m > 0 {
			b.WriteString(strings.Repeat("%", m+1))
		}
	}
	for i := 0; i < len(t); {
		if strings.HasPrefix(t[i:], `\n`) {
			b.WriteString(`\` + standIn("n"))
			i, stood = i+2, true
			continue
		}
		if t[i] != '%' {
			b.WriteByte(t[i])
			i++
			continue
		}
		j := i
		for j < len(t) && t[j] == '%' {
			j++
		}
		m := j - i
		next := ""
		if j < len(t) {
			next = t[j : j+1]
		}
		switch next {
		case "t": // no code is as wide as t: the last % and t stand in together
			percents(m - 1)
			b.WriteString(standIn("%t"))
			j, stood = j+1, true
		case "p", "P", "v":
			percents(m)
			b.WriteString(standIn(next))
			j, stood = j+1, true
		default:
			percents(m)
		}
		i = j
	}
	return b.String(), stood
}

// restoreStandIns puts the letters back into the mark's form XObjects:
// the stream objects the mark added to pc (those not in before).
func restoreStandIns(pc *model.Context, before map[int]bool) error {
	for n, e := range pc.Table {
		if before[n] || e == nil {
			continue
		}
		sd, ok := e.Object.(types.StreamDict)
		if !ok || sd.Subtype() == nil || *sd.Subtype() != "Form" {
			continue
		}
		if err := sd.Decode(); err != nil {
			return fmt.Errorf("object %d: %w", n, err)
		}
		content := sd.Content
		// Pairs first: a pair's codes are not single stand-ins.
		for i := len(standIns) - 1; i >= 0; i-- {
			content = bytes.ReplaceAll(content, winAnsi(standIns[i].in), []byte(standIns[i].out))
		}
		if bytes.Equal(content, sd.Content) {
			continue
		}
		sd.Content = content
		if err := sd.Encode(); err != nil {
			return fmt.Errorf("object %d: %w", n, err)
		}
		e.Object = sd
	}
	return nil
}

// winAnsi is the bytes a content stream holds for the C1 code points s:
// one byte each.
func winAnsi(s string) []byte {
	var b []byte
	for _, r := range s {
		b = append(b, byte(r))
	}
	return b
}
