package main

import "testing"

func TestSiteManualID(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"https://docs.example.com/manual/", "docs.example.com"},
		{"http://127.0.0.1:8080/api/index.html", "127.0.0.1"},
		{"http://[::1]:8080/", "1"},
		{"https://bücher.example/", "b-cher.example"},
		{"not a url", ""},
	} {
		if got := siteManualID(tc.url); got != tc.want {
			t.Errorf("siteManualID(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
}
