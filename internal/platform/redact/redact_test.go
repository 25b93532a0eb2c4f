package redact

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://docs.example.com/print":                          "https://docs.example.com/print",
		"https://docs.example.com/print?token=s3cret&page=2":      "https://docs.example.com/print?page=REDACTED&token=REDACTED",
		"https://docs.example.com/p#frag-s3cret":                  "https://docs.example.com/p",
		"redis://:s3cret@cache:6379/0":                            "redis://:REDACTED@cache:6379/0",
		"redis://app:s3cret@cache:6379/0":                         "redis://app:REDACTED@cache:6379/0",
		"redis://app@cache:6379/0":                                "redis://app@cache:6379/0",
		"redis://:s3cret@cache:notaport/0":                        "redis://REDACTED@cache:notaport/0",
		"https://s3.example/b/k.pdf?X-Amz-Signature=s3cret&X-a=b": "https://s3.example/b/k.pdf?X-Amz-Signature=REDACTED&X-a=REDACTED",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestText_And_Error(t *testing.T) {
	inner := errors.New("base")
	err := fmt.Errorf(`loading "https://docs.example.com/p?token=s3cret": %w`, inner)
	got := Error(err)
	if strings.Contains(got.Error(), "s3cret") || !strings.Contains(got.Error(), "https://docs.example.com/p?token=REDACTED") {
		t.Errorf("Error() = %q", got)
	}
	if !errors.Is(got, inner) {
		t.Error("the redacted error lost its chain")
	}
	if Error(nil) != nil || Error(inner) != inner {
		t.Error("Error of nil or of a clean error is not itself")
	}
	if s := Text(`parse "redis://:s3cret@h:x/0": invalid port`); strings.Contains(s, "s3cret") {
		t.Errorf("Text = %q", s)
	}
}
