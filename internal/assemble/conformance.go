package assemble

import (
	"bytes"
	"encoding/xml"
	"strings"

	"github.com/pdfexport/pdfexport/internal/assemble/pdfclaim"
)

// Conformance is what an assembled file claims in its XMP metadata. The
// claims are only what the assembly can make true of any parts: the
// identification, the document-level entries each standard asks for
// (language, title shown, output intent). What the content must be
// (alternative text, fonts, colours) comes from the parts; docs/EXPORTS.md
// says which clauses the tests check. UA also makes Stats.Findings list
// what the parts lack.
type Conformance = pdfclaim.Claim

// writeMetadata writes the document's XMP metadata stream: its title and
// producer (as the Info dictionary has them, which PDF/A asks to agree)
// and the identification of what it conforms to.
func writeMetadata(w *writer, title, producer string, c Conformance) (int, error) {
	var b strings.Builder
	b.WriteString("<?xpacket begin=\"\ufeff\" id=\"W5M0MpCehiHzreSzNTczkc9d\"?>\n")
	b.WriteString(`<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">` + "\n")
	b.WriteString(`<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:pdf="http://ns.adobe.com/pdf/1.3/"`)
	b.WriteString(c.Namespaces() + ">\n")
	if title != "" {
		b.WriteString(`<dc:title><rdf:Alt><rdf:li xml:lang="x-default">` + xmlText(title) + "</rdf:li></rdf:Alt></dc:title>\n")
	}
	b.WriteString("<pdf:Producer>" + xmlText(producer) + "</pdf:Producer>\n")
	b.WriteString(c.Properties())
	b.WriteString("</rdf:Description>\n")
	b.WriteString(c.Extension())
	b.WriteString("</rdf:RDF></x:xmpmeta>\n<?xpacket end=\"w\"?>")
	d := &dict{}
	d.set("Type", name("Metadata"))
	d.set("Subtype", name("XML"))
	num := w.alloc()
	s := b.String()
	return num, w.stream(num, d, []byte(s))
}

func xmlText(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// writeOutputIntent writes a PDF/A output intent with an sRGB profile.
func writeOutputIntent(w *writer) (int, error) {
	icc := pdfclaim.SRGBProfile()
	pd := &dict{}
	pd.set("N", number("3"))
	pdNum := w.alloc()
	if err := w.stream(pdNum, pd, icc); err != nil {
		return 0, err
	}
	d := &dict{}
	d.set("Type", name("OutputIntent"))
	d.set("S", name(pdfclaim.IntentSubtype))
	d.set("OutputConditionIdentifier", textString(pdfclaim.SRGBName))
	d.set("Info", textString(pdfclaim.SRGBName))
	d.set("RegistryName", textString(pdfclaim.ICCRegistry))
	d.set("DestOutputProfile", ref{pdNum, 0})
	num := w.alloc()
	return num, w.object(num, d)
}
