package engine

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/pdfexport/pdfexport/internal/assemble/pdfclaim"
)

// The XMP namespaces written and read.
const (
	nsRDF       = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
	nsDC        = "http://purl.org/dc/elements/1.1/"
	nsXMP       = "http://ns.adobe.com/xap/1.0/"
	nsPDF       = "http://ns.adobe.com/pdf/1.3/"
	nsXMPRights = "http://ns.adobe.com/xap/1.0/rights/"
)

// maxXMPBytes bounds the XMP packet read from a document.
const maxXMPBytes = 1 << 20

// xmpProps are the XMP properties read back: those only XMP holds, and
// a PDF/A identification to keep when the packet is rewritten.
type xmpProps struct {
	rights      *string
	marked      *bool
	trapped     string
	pdfaPart    string
	pdfaConform string
	uaPart      string
}

// writeXMP sets the document's XMP packet to the information dictionary
// info and the XMP-only properties (plan's, else the old packet's).
func writeXMP(pc *model.Context, info types.Dict, plan metaPlan) error {
	root, err := pc.Catalog()
	if err != nil {
		return &InputError{Err: err}
	}
	old := readXMP(pc, root)
	if plan.rights != nil {
		old.rights = plan.rights
	}
	if plan.marked != nil {
		old.marked = plan.marked
	}
	if c := plan.claim; c != nil {
		old.uaPart, old.pdfaPart, old.pdfaConform = "", "", ""
		if c.UA {
			old.uaPart = "1"
		}
		if c.PDFA != "" {
			old.pdfaPart, old.pdfaConform = c.PDFA[:1], strings.ToUpper(c.PDFA[1:])
		}
	}
	sd := types.StreamDict{Dict: types.NewDict(), Content: xmpPacket(info, old)}
	sd.InsertName("Type", "Metadata")
	sd.InsertName("Subtype", "XML")
	if err := sd.Encode(); err != nil {
		return err
	}
	ir, err := pc.IndRefForNewObject(sd)
	if err != nil {
		return err
	}
	root["Metadata"] = *ir
	return nil
}

// xmpPacket is the packet of info's entries and props.
func xmpPacket(info types.Dict, props xmpProps) []byte {
	text := func(k string) string {
		s, _ := infoText(info, k)
		return s
	}
	var b bytes.Buffer
	esc := func(s string) string {
		var e bytes.Buffer
		_ = xml.EscapeText(&e, []byte(s))
		return e.String()
	}
	b.WriteString("<?xpacket begin=\"\ufeff\" id=\"W5M0MpCehiHzreSzNTczkc9d\"?>\n<x:xmpmeta xmlns:x=\"adobe:ns:meta/\">\n<rdf:RDF xmlns:rdf=\"" + nsRDF + "\">\n")
	claim := props.claim()
	fmt.Fprintf(&b, "<rdf:Description rdf:about=\"\" xmlns:dc=%q xmlns:xmp=%q xmlns:pdf=%q xmlns:xmpRights=%q%s>\n", nsDC, nsXMP, nsPDF, nsXMPRights, claim.Namespaces())
	alt := func(el, v string) {
		if v != "" {
			fmt.Fprintf(&b, "<%s><rdf:Alt><rdf:li xml:lang=\"x-default\">%s</rdf:li></rdf:Alt></%s>\n", el, esc(v), el)
		}
	}
	simple := func(el, v string) {
		if v != "" {
			fmt.Fprintf(&b, "<%s>%s</%s>\n", el, esc(v), el)
		}
	}
	alt("dc:title", text("Title"))
	if a := text("Author"); a != "" {
		fmt.Fprintf(&b, "<dc:creator><rdf:Seq><rdf:li>%s</rdf:li></rdf:Seq></dc:creator>\n", esc(a))
	}
	alt("dc:description", text("Subject"))
	if kw := splitKeywords(text("Keywords")); len(kw) > 0 {
		b.WriteString("<dc:subject><rdf:Bag>")
		for _, k := range kw {
			fmt.Fprintf(&b, "<rdf:li>%s</rdf:li>", esc(k))
		}
		b.WriteString("</rdf:Bag></dc:subject>\n")
	}
	if props.rights != nil {
		alt("dc:rights", *props.rights)
	}
	simple("xmp:CreatorTool", text("Creator"))
	for el, k := range map[string]string{"xmp:CreateDate": "CreationDate", "xmp:ModifyDate": "ModDate"} {
		if t, err := parseMetadataDate(text(k)); err == nil {
			simple(el, t.Format("2006-01-02T15:04:05Z07:00"))
		}
	}
	simple("pdf:Producer", text("Producer"))
	simple("pdf:Keywords", text("Keywords"))
	if n := info.NameEntry("Trapped"); n != nil {
		simple("pdf:Trapped", *n)
	}
	if props.marked != nil {
		simple("xmpRights:Marked", map[bool]string{true: "True", false: "False"}[*props.marked])
	}
	b.WriteString(claim.Properties())
	b.WriteString("</rdf:Description>\n" + claim.Extension() + "</rdf:RDF>\n</x:xmpmeta>\n<?xpacket end=\"w\"?>")
	return b.Bytes()
}

// readXMP reads the properties of the document's XMP packet, if any; an
// unreadable packet is as none.
func readXMP(pc *model.Context, root types.Dict) xmpProps {
	var props xmpProps
	obj, ok := root.Find("Metadata")
	if !ok {
		return props
	}
	sd, _, err := pc.DereferenceStreamDict(obj)
	if err != nil || sd == nil || sd.DecodeWithLimit(maxXMPBytes) != nil {
		return props
	}
	dec := xml.NewDecoder(io.LimitReader(bytes.NewReader(sd.Content), maxXMPBytes))
	var path []xml.Name
	for {
		tok, err := dec.Token()
		if err != nil {
			return props
		}
		switch t := tok.(type) {
		case xml.StartElement:
			path = append(path, t.Name)
			for _, a := range t.Attr {
				props.set(a.Name, a.Value) // the packet's short form: properties as attributes
			}
		case xml.EndElement:
			if len(path) > 0 {
				path = path[:len(path)-1]
			}
		case xml.CharData:
			if v := strings.TrimSpace(string(t)); v != "" && len(path) > 0 {
				prop := path[len(path)-1]
				if prop.Space == nsRDF && len(path) >= 3 {
					prop = path[len(path)-3] // an rdf:li of an Alt, Seq or Bag
				}
				props.set(prop, v)
			}
		}
	}
}

func (p *xmpProps) set(n xml.Name, v string) {
	switch {
	case n.Space == nsDC && n.Local == "rights" && p.rights == nil:
		p.rights = &v
	case n.Space == nsXMPRights && n.Local == "Marked":
		b := strings.EqualFold(v, "true")
		p.marked = &b
	case n.Space == nsPDF && n.Local == "Trapped":
		p.trapped = v
	case n.Space == pdfclaim.NSPDFUAID && n.Local == "part":
		p.uaPart = v
	case n.Space == pdfclaim.NSPDFAID && n.Local == "part":
		p.pdfaPart = v
	case n.Space == pdfclaim.NSPDFAID && n.Local == "conformance":
		p.pdfaConform = v
	}
}

// infoText is the text of the dictionary's entry k.
func infoText(d types.Dict, k string) (string, bool) {
	o, ok := d.Find(k)
	if !ok {
		return "", false
	}
	if n, isName := o.(types.Name); isName {
		return string(n), true
	}
	s, err := model.Text(o)
	return s, err == nil
}

// splitKeywords is a Keywords entry as its words.
func splitKeywords(s string) []string {
	var out []string
	for _, w := range strings.Split(s, ",") {
		if w = strings.TrimSpace(w); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// claim is the identification the packet had, to write again: a claim
// of a level Claim does not make is kept as it was.
func (p xmpProps) claim() pdfclaim.Claim {
	c := pdfclaim.Claim{UA: p.uaPart == "1"}
	if len(p.pdfaPart) == 1 && p.pdfaPart[0] >= '1' && p.pdfaPart[0] <= '4' && len(p.pdfaConform) == 1 {
		c.PDFA = p.pdfaPart + strings.ToLower(p.pdfaConform)
	}
	return c
}
