package gotenberg

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/pdfexport/pdfexport/exportclient"
)

// contract is api/gotenberg.yaml, as much of it as the tests read.
type contract struct {
	Paths      map[string]map[string]any `yaml:"paths"`
	Components struct {
		Schemas map[string]schema `yaml:"schemas"`
	} `yaml:"components"`
}

type schema struct {
	Properties map[string]any `yaml:"properties"`
	AllOf      []struct {
		Ref        string         `yaml:"$ref"`
		Properties map[string]any `yaml:"properties"`
	} `yaml:"allOf"`
}

func readContract(t *testing.T) contract {
	t.Helper()
	raw, err := os.ReadFile("../../api/gotenberg.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c contract
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// fields are a schema's properties, its allOf's included.
func (c contract) fields(name string) map[string]bool {
	s := c.Components.Schemas[name]
	out := map[string]bool{}
	for k := range s.Properties {
		out[k] = true
	}
	for _, a := range s.AllOf {
		if a.Ref != "" {
			maps.Copy(out, c.fields(strings.TrimPrefix(a.Ref, "#/components/schemas/")))
		}
		for k := range a.Properties {
			out[k] = true
		}
	}
	return out
}

// TestContractRoutes: api/gotenberg.yaml lists exactly the routes served
// (each answers, none 404, 405 or 501), and no route answered 501.
func TestContractRoutes(t *testing.T) {
	c := readContract(t)
	h := New(Config{})
	for path, ops := range c.Paths {
		for method := range ops {
			method = strings.ToUpper(method)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
			if rec.Code == http.StatusNotFound || rec.Code == http.StatusMethodNotAllowed || rec.Code == http.StatusNotImplemented {
				t.Errorf("%s %s is in the contract but answers %d", method, path, rec.Code)
			}
		}
	}
	for path := range refusedRoutes {
		if _, listed := c.Paths[path]; listed {
			t.Errorf("%s answers 501 but the contract lists it", path)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, nil))
		if rec.Code != http.StatusNotImplemented || !strings.Contains(rec.Body.String(), path) {
			t.Errorf("%s: %d %q, want 501 naming it", path, rec.Code, rec.Body.String())
		}
	}
}

// TestContractFields: the Chromium fields the code reads are exactly the
// contract's ChromiumFields with the URL route's own and the files.
func TestContractFields(t *testing.T) {
	c := readContract(t)
	f := &form{values: map[string]string{}}
	chromiumOptions(f, &exportclient.Payload{}, "https://docs.example.com/")
	postSteps(f)
	read := slices.Sorted(maps.Keys(f.read))
	listed := c.fields("ChromiumFields")
	for _, k := range []string{"cookies", "extraHttpHeaders"} { // the URL route's
		listed[k] = true
	}
	want := slices.Sorted(maps.Keys(listed))
	if !slices.Equal(read, want) {
		t.Errorf("fields read:\n%v\nfields in the contract:\n%v", read, want)
	}
}
