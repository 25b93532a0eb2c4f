package spec

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestLinkSignature(t *testing.T) {
	oldKey, newKey, other := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32), bytes.Repeat([]byte{3}, 32)
	now := time.Unix(1_800_000_000, 0)
	path := LinkPath("ops-guide", "2026.11")
	signed := SignLink(oldKey, "GET", path, url.Values{"paper": {"Letter"}}, now.Add(time.Hour))
	edit := func(f func(q url.Values)) url.Values {
		q := url.Values{}
		for k, v := range signed {
			q[k] = append([]string(nil), v...)
		}
		f(q)
		return q
	}
	for _, tc := range []struct {
		name   string
		keys   [][]byte
		method string
		path   string
		query  url.Values
		now    time.Time
		want   error // nil: accepted
	}{
		{"signed", [][]byte{oldKey}, "GET", path, signed, now, nil},
		{"HEAD of a GET link", [][]byte{oldKey}, "HEAD", path, signed, now, nil},
		{"rotation: old key still verifies", [][]byte{newKey, oldKey}, "GET", path, signed, now, nil},
		{"rotation: old key dropped", [][]byte{newKey}, "GET", path, signed, now, ErrLinkSignature},
		{"another key", [][]byte{other}, "GET", path, signed, now, ErrLinkSignature},
		{"other method", [][]byte{oldKey}, "POST", path, signed, now, ErrLinkSignature},
		{"other manual", [][]byte{oldKey}, "GET", LinkPath("ops-guide", "2026.12"), signed, now, ErrLinkSignature},
		{"changed parameter", [][]byte{oldKey}, "GET", path, edit(func(q url.Values) { q.Set("paper", "A3") }), now, ErrLinkSignature},
		{"added parameter", [][]byte{oldKey}, "GET", path, edit(func(q url.Values) { q.Set("landscape", "true") }), now, ErrLinkSignature},
		{"dropped parameter", [][]byte{oldKey}, "GET", path, edit(func(q url.Values) { q.Del("paper") }), now, ErrLinkSignature},
		{"extended expiry", [][]byte{oldKey}, "GET", path, edit(func(q url.Values) { q.Set(LinkExpires, "9999999999") }), now, ErrLinkSignature},
		{"flipped signature bit", [][]byte{oldKey}, "GET", path, edit(func(q url.Values) {
			b, _ := base64.RawURLEncoding.DecodeString(q.Get(LinkSignature))
			b[0] ^= 1
			q.Set(LinkSignature, base64.RawURLEncoding.EncodeToString(b))
		}), now, ErrLinkSignature},
		{"expired", [][]byte{oldKey}, "GET", path, signed, now.Add(time.Hour), ErrLinkExpired},
		{"missing signature", [][]byte{oldKey}, "GET", path, edit(func(q url.Values) { q.Del(LinkSignature) }), now, ErrLinkUnsigned},
		{"no query", [][]byte{oldKey}, "GET", path, url.Values{}, now, ErrLinkUnsigned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifyLink(tc.keys, tc.method, tc.path, tc.query, tc.now)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, tc.want) || !errors.Is(err, ErrLinkRefused) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestParseLinkSecrets(t *testing.T) {
	k := "whsec_" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	short := "whsec_" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 16))
	if keys, err := ParseLinkSecrets(k + ", " + k); err != nil || len(keys) != 2 {
		t.Fatalf("two keys: %v %v", len(keys), err)
	}
	for _, bad := range []string{"", "s3cr3tvalue", k + " " + short} {
		_, err := ParseLinkSecrets(bad)
		if !errors.Is(err, ErrInvalidLinkSecret) || (bad != "" && strings.Contains(err.Error(), bad)) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
