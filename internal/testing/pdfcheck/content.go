package pdfcheck

import (
	"fmt"
	"strconv"
)

// scanned is what a page's content holds of marked content.
type scanned struct {
	mcids []int
	// artifactDo are the XObjects drawn inside /Artifact marked content.
	artifactDo []string
	problems   []string
}

type mark struct {
	tag      string
	mcid     int // -1: none
	artifact bool
}

// scan tokenizes a decoded content stream and follows its marked-content
// operators (BMC, BDC, EMC) and XObjects drawn (Do).
func scan(data []byte) scanned {
	var s scanned
	var stack []mark
	var operands []string
	var dictKey string
	var inDict int
	var props map[string]string
	seen := map[int]bool{}
	artifact := func() bool {
		for _, m := range stack {
			if m.artifact {
				return true
			}
		}
		return false
	}
	for i := 0; i < len(data); {
		c := data[i]
		switch {
		case c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' || c == 0:
			i++
			continue
		case c == '%':
			for i < len(data) && data[i] != '\n' && data[i] != '\r' {
				i++
			}
			continue
		case c == '(':
			depth := 0
			for ; i < len(data); i++ {
				if data[i] == '\\' {
					i++
					continue
				}
				if data[i] == '(' {
					depth++
				} else if data[i] == ')' {
					depth--
					if depth == 0 {
						i++
						break
					}
				}
			}
			operands = append(operands, "(string)")
			continue
		case c == '<' && i+1 < len(data) && data[i+1] == '<':
			inDict++
			if inDict == 1 {
				props, dictKey = map[string]string{}, ""
			}
			i += 2
			continue
		case c == '>' && i+1 < len(data) && data[i+1] == '>':
			inDict--
			i += 2
			if inDict == 0 {
				operands = append(operands, "<<dict>>")
			}
			continue
		case c == '<':
			for i < len(data) && data[i] != '>' {
				i++
			}
			i++
			operands = append(operands, "<hex>")
			continue
		case c == '[' || c == ']' || c == '{' || c == '}':
			i++
			continue
		}
		j := i + 1
		for j < len(data) && !delim(data[j]) && data[j] != '/' {
			j++
		}
		tok := string(data[i:j])
		i = j
		if inDict > 0 {
			if inDict == 1 {
				if dictKey == "" && tok[0] == '/' {
					dictKey = tok
				} else {
					props[dictKey], dictKey = tok, ""
				}
			}
			continue
		}
		if tok[0] == '/' || isNum(tok) {
			operands = append(operands, tok)
			continue
		}
		switch tok {
		case "BMC", "BDC":
			tag := ""
			for _, o := range operands {
				if len(o) > 0 && o[0] == '/' {
					tag = o
					break
				}
			}
			m := mark{tag: tag, mcid: -1, artifact: tag == "/Artifact"}
			if tok == "BDC" {
				if v, ok := props["/MCID"]; ok {
					m.mcid, _ = strconv.Atoi(v)
				}
			}
			if m.mcid >= 0 {
				if artifact() {
					s.problems = append(s.problems, fmt.Sprintf("marked content %d inside an artifact", m.mcid))
				}
				if seen[m.mcid] {
					s.problems = append(s.problems, fmt.Sprintf("marked content id %d twice", m.mcid))
				}
				seen[m.mcid] = true
				s.mcids = append(s.mcids, m.mcid)
			}
			stack = append(stack, m)
			props = nil
		case "EMC":
			if len(stack) == 0 {
				s.problems = append(s.problems, "EMC without a BMC or BDC")
			} else {
				stack = stack[:len(stack)-1]
			}
		case "Do":
			if len(operands) > 0 && artifact() {
				s.artifactDo = append(s.artifactDo, operands[len(operands)-1][1:])
			}
		case "BI":
			// An inline image: its data runs to "EI".
			for i+2 < len(data) && !(delim(data[i]) && data[i+1] == 'E' && data[i+2] == 'I') {
				i++
			}
			i += 3
		}
		operands = operands[:0]
	}
	if len(stack) > 0 {
		s.problems = append(s.problems, fmt.Sprintf("%d marked-content sequences never closed", len(stack)))
	}
	return s
}

func delim(c byte) bool {
	switch c {
	case ' ', '\n', '\r', '\t', '\f', 0, '(', ')', '<', '>', '[', ']', '{', '}', '%':
		return true
	}
	return false
}

func isNum(t string) bool {
	_, err := strconv.ParseFloat(t, 64)
	return err == nil
}
