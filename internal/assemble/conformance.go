package assemble

import (
	"bytes"
	"encoding/xml"
	"strings"
)

// Conformance is what an assembled file claims in its XMP metadata. The
// claims are only what the assembly can make true of any parts: the
// identification, the document-level entries each standard asks for
// (language, title shown, output intent). What the content must be
// (alternative text, fonts, colours) comes from the parts; docs/EXPORTS.md
// says which clauses the tests check.
type Conformance struct {
	// UA claims PDF/UA-1 (ISO 14289-1): tagged, and Stats.Findings lists
	// what the parts lack.
	UA bool
	// PDFA is the PDF/A part and level claimed: "2b" (ISO 19005-2, level
	// B) or "" for none. It adds an sRGB output intent.
	PDFA string
}

func (c Conformance) claims() bool { return c.UA || c.PDFA != "" }

// writeMetadata writes the document's XMP metadata stream: its title and
// producer (as the Info dictionary has them, which PDF/A asks to agree)
// and the identification of what it conforms to.
func writeMetadata(w *writer, title, producer string, c Conformance) (int, error) {
	var b strings.Builder
	b.WriteString("<?xpacket begin=\"\ufeff\" id=\"W5M0MpCehiHzreSzNTczkc9d\"?>\n")
	b.WriteString(`<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">` + "\n")
	b.WriteString(`<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:pdf="http://ns.adobe.com/pdf/1.3/"`)
	if c.UA {
		b.WriteString(` xmlns:pdfuaid="http://www.aiim.org/pdfua/ns/id/"`)
	}
	if c.PDFA != "" {
		b.WriteString(` xmlns:pdfaid="http://www.aiim.org/pdfa/ns/id/"`)
	}
	b.WriteString(">\n")
	if title != "" {
		b.WriteString(`<dc:title><rdf:Alt><rdf:li xml:lang="x-default">` + xmlText(title) + "</rdf:li></rdf:Alt></dc:title>\n")
	}
	b.WriteString("<pdf:Producer>" + xmlText(producer) + "</pdf:Producer>\n")
	if c.UA {
		b.WriteString("<pdfuaid:part>1</pdfuaid:part>\n")
	}
	if c.PDFA != "" {
		b.WriteString("<pdfaid:part>" + c.PDFA[:1] + "</pdfaid:part><pdfaid:conformance>" + strings.ToUpper(c.PDFA[1:]) + "</pdfaid:conformance>\n")
	}
	b.WriteString("</rdf:Description>\n")
	if c.UA && c.PDFA != "" {
		// PDF/A admits only the schemas it predefines, or ones the file
		// describes: pdfuaid is not predefined.
		b.WriteString(pdfuaidExtension)
	}
	b.WriteString("</rdf:RDF></x:xmpmeta>\n<?xpacket end=\"w\"?>")
	d := &dict{}
	d.set("Type", name("Metadata"))
	d.set("Subtype", name("XML"))
	num := w.alloc()
	s := b.String()
	return num, w.stream(num, d, []byte(s))
}

const pdfuaidExtension = `<rdf:Description rdf:about="" xmlns:pdfaExtension="http://www.aiim.org/pdfa/ns/extension/" xmlns:pdfaSchema="http://www.aiim.org/pdfa/ns/schema#" xmlns:pdfaProperty="http://www.aiim.org/pdfa/ns/property#">
<pdfaExtension:schemas><rdf:Bag><rdf:li rdf:parseType="Resource">
<pdfaSchema:schema>PDF/UA Universal Accessibility Schema</pdfaSchema:schema>
<pdfaSchema:namespaceURI>http://www.aiim.org/pdfua/ns/id/</pdfaSchema:namespaceURI>
<pdfaSchema:prefix>pdfuaid</pdfaSchema:prefix>
<pdfaSchema:property><rdf:Seq><rdf:li rdf:parseType="Resource">
<pdfaProperty:name>part</pdfaProperty:name>
<pdfaProperty:valueType>Integer</pdfaProperty:valueType>
<pdfaProperty:category>internal</pdfaProperty:category>
<pdfaProperty:description>Indicates which part of ISO 14289 the document conforms to</pdfaProperty:description>
</rdf:li></rdf:Seq></pdfaSchema:property>
</rdf:li></rdf:Bag></pdfaExtension:schemas>
</rdf:Description>
`

func xmlText(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// sRGBName is the output condition the intent names.
const sRGBName = "sRGB IEC61966-2.1"

// writeOutputIntent writes a PDF/A output intent with an sRGB profile:
// Chromium paints in DeviceRGB, which PDF/A admits only with an RGB
// output intent.
func writeOutputIntent(w *writer) (int, error) {
	icc := srgbProfile()
	pd := &dict{}
	pd.set("N", number("3"))
	pdNum := w.alloc()
	if err := w.stream(pdNum, pd, icc); err != nil {
		return 0, err
	}
	d := &dict{}
	d.set("Type", name("OutputIntent"))
	d.set("S", name("GTS_PDFA1"))
	d.set("OutputConditionIdentifier", textString(sRGBName))
	d.set("Info", textString(sRGBName))
	d.set("RegistryName", textString("http://www.color.org"))
	d.set("DestOutputProfile", ref{pdNum, 0})
	num := w.alloc()
	return num, w.object(num, d)
}
