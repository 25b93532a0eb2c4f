package reload

import (
	"strings"
	"testing"
)

// TestYAMLToJSON: the operator's YAML (and JSON) files become the JSON the
// strict decoders read, with YAML 1.2's scalars, and what would be half
// read (a repeated key, a second document) is refused, naming the line.
func TestYAMLToJSON(t *testing.T) {
	tests := []struct {
		name, in, want, wantErr string
	}{
		{"empty", "", "null", ""},
		{"json", `{"a": [1, 2.5, true, null, "s"]}`, `{"a":[1,2.5,true,null,"s"]}`, ""},
		{"yaml", "clients:\n  - name: ci\n    token: \"env:CI_TOKEN\"\n    queues: [batch]\n", `{"clients":[{"name":"ci","queues":["batch"],"token":"env:CI_TOKEN"}]}`, ""},
		{"keys become strings", "1: x\ntrue: y", `{"1":"x","true":"y"}`, ""},
		{"yes is a string", "y: yes", `{"y":"yes"}`, ""},
		{"a date stays its text", "d: 2026-12-01", `{"d":"2026-12-01"}`, ""},
		{"null", "n: ~", `{"n":null}`, ""},
		{"alias", "a: &x {b: 1}\nc: *x", `{"a":{"b":1},"c":{"b":1}}`, ""},
		{"repeated key", "a: 1\na: 2", "", `line 2: key "a" given twice`},
		{"second document", "a: 1\n---\nb: 2\n", "", "line 2: a second YAML document"},
		{"not yaml", "a: [1, 2", "", "yaml:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := YAMLToJSON([]byte(tt.in))
			switch {
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one saying %q (got %s)", err, tt.wantErr, got)
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case string(got) != tt.want:
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}
