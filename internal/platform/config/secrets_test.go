package config

import (
	"encoding/base64"
	"strings"
	"testing"
)

// TestLoad_SecretsKey: every role (enqueuers seal, workers open) reads
// SECRETS_KEY, so Load checks it: whsec_ entries of 32 bytes or more,
// rotated as a list; a bad entry is named by position, never shown.
func TestLoad_SecretsKey(t *testing.T) {
	const secret = "SECRET-6b20e4d9a1c3f857-0123456789"
	key := "whsec_" + base64.StdEncoding.EncodeToString([]byte(secret))
	short := "whsec_" + base64.StdEncoding.EncodeToString([]byte(secret[:24]))
	for _, tc := range []struct {
		value string
		want  string // "" valid; otherwise a word of SECRETS_KEY's reason
	}{
		{"", ""},
		{key, ""},
		{key + " " + key, ""},
		{short, "entry 1 of 1 decodes to 24 bytes, want at least 32"},
		{key + "," + secret, "entry 2 of 2 does not start with whsec_"},
	} {
		_, err := Load([]string{"SECRETS_KEY=" + tc.value})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.value, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), "SECRETS_KEY: ") || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want SECRETS_KEY refused saying %q", tc.value, err, tc.want)
		case err != nil && (strings.Contains(err.Error(), secret[:24]) || strings.Contains(err.Error(), base64.StdEncoding.EncodeToString([]byte(secret[:24])))):
			t.Errorf("%q: the error shows the secret: %v", tc.value, err)
		}
	}
}
