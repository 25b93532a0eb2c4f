package harness

import "testing"

func TestParsePDFInfo(t *testing.T) {
	out := "Title:           Manual: chapter 1\nTagged:          yes\nPages:           7\n" +
		"Page size:       595.28 x 841.89 pts (A4)\n\n"
	info := parsePDFInfo(out)
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
}
