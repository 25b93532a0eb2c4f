package pdfcheck

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// testPDF is a two-page PDF written by hand, so that what the tools read
// is known exactly: a title, text on each page in Helvetica (not
// embedded), and a 2×2 RGB image on the first page.
func testPDF() []byte {
	page := func(content string) string {
		return fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content)
	}
	pixels := "\xff\x00\x00\x00\xff\x00\x00\x00\xff\xff\xff\xff"
	objects := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Resources << /Font << /F1 5 0 R >> /XObject << /Im1 6 0 R >> >> /Contents 7 0 R >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Resources << /Font << /F1 5 0 R >> >> /Contents 8 0 R >>",
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
		fmt.Sprintf("<< /Type /XObject /Subtype /Image /Width 2 /Height 2 /ColorSpace /DeviceRGB /BitsPerComponent 8 /Length %d >>\nstream\n%s\nendstream", len(pixels), pixels),
		page("BT /F1 12 Tf 20 150 Td (First page text) Tj ET q 40 0 0 40 20 20 cm /Im1 Do Q"),
		page("BT /F1 12 Tf 20 150 Td (Second page text) Tj ET"),
		"<< /Title (Poppler test) /Author (pdfcheck) >>",
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objects))
	for i, o := range objects {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objects)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R /Info 9 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objects)+1, xref)
	return b.Bytes()
}

// TestPoppler: every tool's output of a known file, parsed; an encrypted
// copy opens only with its user password.
func TestPoppler(t *testing.T) {
	if missing := MissingPopplerTools(); len(missing) > 0 {
		t.Fatalf("%v missing (make setup installs poppler-utils)", missing)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "test.pdf")
	if err := os.WriteFile(path, testPDF(), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	p := Poppler{Path: path}

	info, err := p.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info["Title"] != "Poppler test" || info["Author"] != "pdfcheck" || info["Encrypted"] != "no" || info["Page size"] != "200 x 200 pts" {
		t.Errorf("info %v", info)
	}
	if n, err := p.Pages(ctx); n != 2 || err != nil {
		t.Errorf("pages = %d, %v; want 2", n, err)
	}

	for _, tc := range []struct {
		mode        TextMode
		first, last int
		want        []string
		not         []string
	}{
		{Reading, AllPages, AllPages, []string{"First page text", "Second page text"}, nil},
		{Layout, 2, 2, []string{"Second page text"}, []string{"First"}},
		{Raw, 1, 1, []string{"First page text"}, []string{"Second"}},
		{Reading, 2, AllPages, []string{"Second page text"}, []string{"First"}},
	} {
		text, err := p.Text(ctx, tc.mode, tc.first, tc.last)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("text (mode %d, pages %d-%d) %q lacks %q", tc.mode, tc.first, tc.last, text, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(text, n) {
				t.Errorf("text (mode %d, pages %d-%d) %q has %q", tc.mode, tc.first, tc.last, text, n)
			}
		}
	}

	fonts, err := p.Fonts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Font{{Name: "Helvetica", Type: "Type 1", Encoding: "WinAnsi", Object: "5 0"}}; !slices.Equal(fonts, want) {
		t.Errorf("fonts %+v, want %+v", fonts, want)
	}
	images, err := p.Images(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(images) != 1 || images[0].Page != 1 || images[0].Width != 2 || images[0].Height != 2 || images[0].Color != "rgb" ||
		images[0].Components != 3 || images[0].BitsPerComp != 8 || images[0].Object != "6 0" {
		t.Errorf("images %+v, want one 2×2 rgb on page 1, object 6 0", images)
	}

	if _, err := exec.LookPath("qpdf"); err != nil {
		t.Fatal("qpdf is missing (make setup installs it)")
	}
	encrypted := filepath.Join(dir, "encrypted.pdf")
	if out, err := exec.Command("qpdf", "--encrypt", "user-pw", "owner-pw", "256", "--", path, encrypted).CombinedOutput(); err != nil {
		t.Fatalf("qpdf --encrypt: %v\n%s", err, out)
	}
	if _, err := (Poppler{Path: encrypted}).Info(ctx); err == nil {
		t.Error("the encrypted copy opens without its user password")
	}
	info, err = Poppler{Path: encrypted, UserPassword: "user-pw"}.Info(ctx)
	if err != nil || !strings.HasPrefix(info["Encrypted"], "yes") || info["Pages"] != "2" {
		t.Errorf("the encrypted copy with its user password: %v, %v", info, err)
	}
}

// TestParseInfo: pdfinfo's fields, values keeping their own colons.
func TestParseInfo(t *testing.T) {
	out := "Title:           Manual: chapter 1\nTagged:          yes\nPages:           7\n" +
		"Page size:       595.28 x 841.89 pts (A4)\n\n"
	info := parseInfo(out)
	for k, want := range map[string]string{
		"Title": "Manual: chapter 1", "Tagged": "yes", "Pages": "7", "Page size": "595.28 x 841.89 pts (A4)",
	} {
		if got := info[k]; got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if len(info) != 4 {
		t.Errorf("parsed %d fields, want 4: %v", len(info), info)
	}
	for _, tc := range []struct {
		pages string
		want  int
		err   bool
	}{{"7", 7, false}, {"0", 0, true}, {"seven", 0, true}, {"", 0, true}} {
		i := Info{}
		if tc.pages != "" {
			i["Pages"] = tc.pages
		}
		if n, err := i.Pages(); n != tc.want || (err != nil) != tc.err {
			t.Errorf("Pages %q = %d, %v; want %d, error %v", tc.pages, n, err, tc.want, tc.err)
		}
	}
}

// TestParseFonts: types with spaces, a name too long for its column.
func TestParseFonts(t *testing.T) {
	out := `name                                 type              encoding         emb sub uni object ID
------------------------------------ ----------------- ---------------- --- --- --- ---------
AAAAAA+DejaVuSans                    CID TrueType      Identity-H       yes yes yes     12  0
BBBBBB+AVeryLongFontNameThatOverflowsItsColumn Type 1C           Custom           yes yes no      14  0
[none]                               Type 3            Custom           yes no  no       9  0
`
	fonts, err := parseFonts(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []Font{
		{Name: "AAAAAA+DejaVuSans", Type: "CID TrueType", Encoding: "Identity-H", Embedded: true, Subset: true, Unicode: true, Object: "12 0"},
		{Name: "BBBBBB+AVeryLongFontNameThatOverflowsItsColumn", Type: "Type 1C", Encoding: "Custom", Embedded: true, Subset: true, Object: "14 0"},
		{Name: "[none]", Type: "Type 3", Encoding: "Custom", Embedded: true, Object: "9 0"},
	}
	if !slices.Equal(fonts, want) {
		t.Errorf("fonts\n%+v\nwant\n%+v", fonts, want)
	}
	if _, err := parseFonts("name type\n---- ----\nbroken row\n"); err == nil {
		t.Error("a short row parsed")
	}
	if fonts, err := parseFonts("name type encoding emb sub uni object ID\n---- ---- --------\n"); err != nil || len(fonts) != 0 {
		t.Errorf("no fonts: %v, %v", fonts, err)
	}
}

// TestParseImages: every column of pdfimages -list.
func TestParseImages(t *testing.T) {
	out := `page   num  type   width height color comp bpc  enc interp  object ID x-ppi y-ppi size ratio
--------------------------------------------------------------------------------------------
   1     0 image    1024   768  rgb     3   8  jpeg   no        10  0    72    72 96.0K 4.2%
   3     1 smask      16    16  gray    1   8  image  yes       21  0   144   144   34B  13%
`
	images, err := parseImages(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []Image{
		{Page: 1, Num: 0, Type: "image", Width: 1024, Height: 768, Color: "rgb", Components: 3, BitsPerComp: 8, Encoding: "jpeg",
			Object: "10 0", XPPI: 72, YPPI: 72, Size: "96.0K", Ratio: "4.2%"},
		{Page: 3, Num: 1, Type: "smask", Width: 16, Height: 16, Color: "gray", Components: 1, BitsPerComp: 8, Encoding: "image",
			Interpolate: true, Object: "21 0", XPPI: 144, YPPI: 144, Size: "34B", Ratio: "13%"},
	}
	if !slices.Equal(images, want) {
		t.Errorf("images\n%+v\nwant\n%+v", images, want)
	}
	if _, err := parseImages("page num\n----\n1 0 image\n"); err == nil {
		t.Error("a short row parsed")
	}
}
