// Package pdfclaim is what a PDF claims to conform to (PDF/A, PDF/UA) and
// the pieces every writer of such a file shares: the XMP identification
// and the sRGB output intent. The manual assembler (internal/assemble) and
// the PDF engines (internal/assemble/engine) write the same claims through
// it, each with its own object writer.
package pdfclaim

import (
	"fmt"
	"strings"
)

// Claim is what a file claims in its XMP metadata.
type Claim struct {
	// UA claims PDF/UA-1 (ISO 14289-1).
	UA bool
	// PDFA is the PDF/A part and level claimed: "1b", "2b" or "3b"
	// (ISO 19005-1/2/3, level B), or "" for none. It comes with an sRGB
	// output intent.
	PDFA string
}

// Any reports whether c claims anything.
func (c Claim) Any() bool { return c.UA || c.PDFA != "" }

// Levels are the PDF/A parts and levels a Claim can make: level B is what
// a writer can make true of content it did not lay out (the accessible
// levels A and U ask for tagging and Unicode the content must have).
var Levels = []string{"1b", "2b", "3b"}

// Valid reports whether c's PDFA is "" or one of Levels.
func (c Claim) Valid() bool {
	if c.PDFA == "" {
		return true
	}
	for _, l := range Levels {
		if c.PDFA == l {
			return true
		}
	}
	return false
}

// The identification namespaces.
const (
	NSPDFAID  = "http://www.aiim.org/pdfa/ns/id/"
	NSPDFUAID = "http://www.aiim.org/pdfua/ns/id/"
)

// Namespaces are the xmlns attributes (each with a leading space) that the
// rdf:Description holding Properties declares.
func (c Claim) Namespaces() string {
	var b strings.Builder
	if c.UA {
		fmt.Fprintf(&b, " xmlns:pdfuaid=%q", NSPDFUAID)
	}
	if c.PDFA != "" {
		fmt.Fprintf(&b, " xmlns:pdfaid=%q", NSPDFAID)
	}
	return b.String()
}

// Properties are the identification's XMP properties, one a line.
func (c Claim) Properties() string {
	var b strings.Builder
	if c.UA {
		b.WriteString("<pdfuaid:part>1</pdfuaid:part>\n")
	}
	if c.PDFA != "" {
		b.WriteString("<pdfaid:part>" + c.PDFA[:1] + "</pdfaid:part>\n<pdfaid:conformance>" + strings.ToUpper(c.PDFA[1:]) + "</pdfaid:conformance>\n")
	}
	return b.String()
}

// Extension is the rdf:Description, after the one holding Properties, that
// PDF/A asks for a schema it does not predefine: pdfuaid is not
// predefined, so a file claiming both describes it.
func (c Claim) Extension() string {
	if !c.UA || c.PDFA == "" {
		return ""
	}
	return pdfuaidExtension
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

// The output intent's entries: Chromium paints in DeviceRGB, which PDF/A
// admits only with an RGB output intent, here sRGB (SRGBProfile).
const (
	IntentSubtype = "GTS_PDFA1"
	SRGBName      = "sRGB IEC61966-2.1"
	ICCRegistry   = "http://www.color.org"
)
