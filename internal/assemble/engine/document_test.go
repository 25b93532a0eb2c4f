package engine

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pdfexport/pdfexport/internal/testing/pdfcheck"
)

// TestDocument_Chain: one read, a literal mark, the information entries,
// the language and encryption, one write: a reader with the password sees
// every one of them, and the page count and catalog answer before it.
func TestDocument_Chain(t *testing.T) {
	if missing := pdfcheck.MissingPopplerTools(); len(missing) > 0 {
		t.Skipf("%v missing", missing)
	}
	ctx := context.Background()
	d, err := ReadDocument(ctx, bytes.NewReader(testPDF("one", "two")), PrintedConf())
	if err != nil {
		t.Fatal(err)
	}
	if n, err := d.Pages(); err != nil || n != 2 {
		t.Fatalf("Pages = %d, %v; want 2", n, err)
	}
	if has, err := d.CatalogHas("Pages"); err != nil || !has {
		t.Fatalf("CatalogHas(Pages) = %v, %v", has, err)
	}
	if has, _ := d.CatalogHas("Pages", "StructTreeRoot"); has {
		t.Fatal("CatalogHas(Pages, StructTreeRoot) on an untagged PDF")
	}
	mark := Mark{Source: SourceText, Text: `C:\new 100% %p`, Literal: true, Options: map[string]string{"font": "Helvetica", "points": "12", "rot": "0"}}
	if err := d.AddMarks(ctx, []Mark{mark}, true); err != nil {
		t.Fatal(err)
	}
	if err := d.SetInfo(map[string]string{"Title": "Chained", "Author": "", "Subject": "S"}); err != nil {
		t.Fatal(err)
	}
	if err := d.SetLang("de-CH"); err != nil {
		t.Fatal(err)
	}
	if err := d.Encrypt(EncryptOptions{UserPassword: "u", OwnerPassword: "o", Allow: []string{"print"}}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := d.Write(&out, true); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "c.pdf")
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	p := pdfcheck.Poppler{Path: path, UserPassword: "u"}
	info, err := p.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info["Title"] != "Chained" || info["Subject"] != "S" || info["Pages"] != "2" || !strings.HasPrefix(info["Encrypted"], "yes") {
		t.Errorf("info %v; want the title, subject, 2 pages, encrypted", info)
	}
	if _, ok := info["Author"]; ok {
		t.Errorf("an empty Author was written: %q", info["Author"])
	}
	text, err := p.Text(ctx, pdfcheck.Raw, pdfcheck.AllPages, pdfcheck.AllPages)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, `C:\new 100% %p`) {
		t.Errorf("text %q; want the mark as typed", text)
	}
	if !bytes.Contains(out.Bytes(), []byte("/Lang")) {
		t.Error("no /Lang in the written catalog")
	}
}

// TestDocument_Refusals: an unreadable PDF and passwords the engine
// cannot encrypt with are the caller's *InputError.
func TestDocument_Refusals(t *testing.T) {
	var ie *InputError
	if _, err := ReadDocument(context.Background(), bytes.NewReader([]byte("%PDF-1.7 no")), Conf()); !errors.As(err, &ie) {
		t.Errorf("ReadDocument of garbage = %v, want an *InputError", err)
	}
	d, err := ReadDocument(context.Background(), bytes.NewReader(testPDF("x")), Conf())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []EncryptOptions{{}, {OwnerPassword: strings.Repeat("x", MaxPasswordBytes+1)}} {
		if err := d.Encrypt(o); !errors.As(err, &ie) {
			t.Errorf("Encrypt(%d-byte owner) = %v, want an *InputError", len(o.OwnerPassword), err)
		}
	}
}
