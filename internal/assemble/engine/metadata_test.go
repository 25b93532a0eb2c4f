package engine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pdfexport/pdfexport/internal/testing/pdfcheck"
)

// gotenbergMetadata is the metadata object of Gotenberg's own tests.
const gotenbergMetadata = `{"Author":"Julien Neuhart","Copyright":"Julien Neuhart","CreateDate":"2006-09-18T16:27:50-04:00","Creator":"Gotenberg","Keywords":["first","second"],"Marked":true,"ModDate":"2006-09-18T16:27:50-04:00","PDFVersion":1.7,"Producer":"Gotenberg","Subject":"Sample","Title":"Sample","Trapped":"Unknown"}`

func metadataValues(t *testing.T, s string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestMetadataRoundTrip: what WriteMetadata writes, ReadMetadata reads
// under the names Gotenberg answers; Producer and the dates are the
// caller's, not pdfcpu's; poppler reads the information dictionary.
func TestMetadataRoundTrip(t *testing.T) {
	ctx := context.Background()
	out, err := WriteMetadata(ctx, testPDF("Page one"), MetadataOptions{Values: metadataValues(t, gotenbergMetadata)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadMetadata(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"Author": "Julien Neuhart", "Copyright": "Julien Neuhart", "CreateDate": "2006:09:18 16:27:50-04:00",
		"Creator": "Gotenberg", "Keywords": []string{"first", "second"}, "Marked": true,
		"ModDate": "2006:09:18 16:27:50-04:00", "ModifyDate": "2006:09:18 16:27:50-04:00", "PDFVersion": 1.7,
		"Producer": "Gotenberg", "Subject": "Sample", "Title": "Sample", "Trapped": "Unknown", "PageCount": 1,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read\n%v\nwant\n%v", got, want)
	}
	if missing := pdfcheck.MissingPopplerTools(); len(missing) == 0 {
		path := filepath.Join(t.TempDir(), "m.pdf")
		if err := os.WriteFile(path, out, 0o600); err != nil {
			t.Fatal(err)
		}
		info, err := pdfcheck.Poppler{Path: path}.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info["Title"] != "Sample" || info["Producer"] != "Gotenberg" || info["Keywords"] != "first, second" {
			t.Errorf("pdfinfo: %v", info)
		}
	}
	// A second write keeps what it is not given and replaces Keywords.
	again, err := WriteMetadata(ctx, out, MetadataOptions{Values: map[string]any{"Keywords": "third", "Company": "Acme"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err = ReadMetadata(ctx, again)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"Keywords": "third", "Company": "Acme", "Title": "Sample", "Copyright": "Julien Neuhart", "Marked": true, "Producer": "Gotenberg"} {
		if !reflect.DeepEqual(got[k], v) {
			t.Errorf("after a second write %s = %v, want %v", k, got[k], v)
		}
	}
}

// TestMetadataRefusals: every key that cannot be written is named, in
// key order; file operations are dropped, not refused.
func TestMetadataRefusals(t *testing.T) {
	values := metadataValues(t, `{"Title":"a\nb","-x":"y","Marked":"perhaps","CreateDate":"yesterday","Author":{"a":1},
		"Keywords":["a",1],"System:FileName":"stolen.pdf","Directory":"/tmp","Subject":"fine","PDFVersion":1.4}`)
	err := CheckMetadata(values)
	var me *MetadataError
	var ie *InputError
	if !errors.As(err, &ie) || !errors.As(err, &me) {
		t.Fatalf("err = %v", err)
	}
	var keys []string
	for _, k := range me.Keys {
		keys = append(keys, k.Key)
	}
	if want := []string{"-x", "Author", "CreateDate", "Keywords", "Marked", "PDFVersion", "Title"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("keys %v, want %v (%v)", keys, want, err)
	}
	if !strings.Contains(err.Error(), "control character") {
		t.Errorf("%v does not say why Title is refused", err)
	}
	out, err := WriteMetadata(context.Background(), testPDF("x"), MetadataOptions{Values: map[string]any{"System:FileName": "stolen.pdf", "Author": "legit"}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := ReadMetadata(context.Background(), out)
	if got["Author"] != "legit" || got["FileName"] != nil {
		t.Errorf("read %v", got)
	}
}

// TestMetadataDates: the date forms taken, as the PDF dates written.
func TestMetadataDates(t *testing.T) {
	for in, want := range map[string]string{
		"2006-09-18T16:27:50-04:00": "D:20060918162750-04'00'",
		"2006:09:18 16:27:50+05:30": "D:20060918162750+05'30'",
		"2006-09-18":                "D:20060918000000Z",
		"D:20060918162750Z":         "D:20060918162750Z",
	} {
		tm, err := parseMetadataDate(in)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if got := pdfDate(tm); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
	for _, bad := range []string{"2006-13-01", "2006-02-30", "tomorrow", "2006-09-18T25:00:00"} {
		if _, err := parseMetadataDate(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
