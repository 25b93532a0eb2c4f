package api

import (
	"net/http"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

type openAPI struct {
	Paths      map[string]map[string]any `yaml:"paths"`
	Components struct {
		Schemas       map[string]schemaProps `yaml:"schemas"`
		RequestBodies map[string]struct {
			Content map[string]struct {
				Schema schemaProps `yaml:"schema"`
			} `yaml:"content"`
		} `yaml:"requestBodies"`
	} `yaml:"components"`
}

type schemaProps struct {
	Properties map[string]any `yaml:"properties"`
}

// payload is the schema of POST /v1/exports's body, a request body of its
// own (components.requestBodies), not a component schema: openapi-typescript
// makes every defaulted property of a component schema required.
func (d openAPI) payload() schemaProps {
	return d.Components.RequestBodies["Payload"].Content["application/json"].Schema
}

func loadOpenAPI(t *testing.T) openAPI {
	raw, err := os.ReadFile("../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc openAPI
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestOpenAPI_MatchesServedRoutes: every documented route answers (not
// 404/405 from the router), and undocumented methods do not.
func TestOpenAPI_MatchesServedRoutes(t *testing.T) {
	redis := testsupport.StartRedis(t)
	srv := newTestAPI(t, redis.Addr(), "")
	doc := loadOpenAPI(t)
	if len(doc.Paths) == 0 {
		t.Fatal("no paths documented")
	}
	for path, ops := range doc.Paths {
		concrete := strings.ReplaceAll(path, "{id}", "some-id")
		for _, method := range []string{"GET", "POST", "PUT", "DELETE", "PATCH"} {
			_, documented := ops[strings.ToLower(method)]
			req, _ := http.NewRequest(method, srv.URL+concrete, strings.NewReader(`{}`))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			routed := resp.StatusCode != http.StatusMethodNotAllowed &&
				!(resp.StatusCode == http.StatusNotFound && resp.Header.Get("Content-Type") != "application/json")
			if documented != routed {
				t.Errorf("%s %s: documented=%v but server answered %d", method, path, documented, resp.StatusCode)
			}
		}
	}
}

// TestOpenAPI_SchemasMatchContract: the documented payload and result fields
// are exactly the JSON fields of the Go types.
func TestOpenAPI_SchemasMatchContract(t *testing.T) {
	doc := loadOpenAPI(t)
	if _, ok := doc.Components.Schemas["Payload"]; ok {
		t.Error("Payload is a component schema again: generated clients would require its defaulted fields")
	}
	schemas := map[string]schemaProps{"Payload": doc.payload()}
	for name, s := range doc.Components.Schemas {
		schemas[name] = s
	}
	for schema, typ := range map[string]reflect.Type{
		"Payload": reflect.TypeOf(spec.Request{}),
		"Result":  reflect.TypeOf(spec.Result{}),
		"Final":   reflect.TypeOf(spec.Final{}),
		"Warning": reflect.TypeOf(spec.Warning{}),
	} {
		var documented []string
		for name := range schemas[schema].Properties {
			documented = append(documented, name)
		}
		fields := jsonFields(typ)
		sort.Strings(documented)
		sort.Strings(fields)
		if !reflect.DeepEqual(documented, fields) {
			t.Errorf("schema %s documents %v, Go type has %v", schema, documented, fields)
		}
	}
	// A request's source: what a caller may send, and no envelope-only field.
	var source []string
	src, _ := doc.payload().Properties["source"].(map[string]any)
	props, _ := src["properties"].(map[string]any)
	for name := range props {
		source = append(source, name)
	}
	sort.Strings(source)
	if want := jsonFields(reflect.TypeOf(spec.RequestSource{})); !reflect.DeepEqual(source, want) {
		t.Errorf("Payload.source documents %v, spec.RequestSource has %v", source, want)
	}
	// The options, and the document options' objects in them.
	opts, _ := doc.payload().Properties["options"].(map[string]any)
	for path, typ := range map[string]reflect.Type{
		"options":            reflect.TypeOf(spec.Options{}),
		"options.metadata":   reflect.TypeOf(spec.Metadata{}),
		"options.watermark":  reflect.TypeOf(spec.Watermark{}),
		"options.encryption": reflect.TypeOf(spec.Encryption{}),
	} {
		obj := opts
		if _, sub, ok := strings.Cut(path, "."); ok {
			props, _ := opts["properties"].(map[string]any)
			obj, _ = props[sub].(map[string]any)
		}
		props, _ := obj["properties"].(map[string]any)
		var documented []string
		for name := range props {
			documented = append(documented, name)
		}
		sort.Strings(documented)
		if want := jsonFields(typ); !reflect.DeepEqual(documented, want) {
			t.Errorf("Payload.%s documents %v, %s has %v", path, documented, typ, want)
		}
	}
	child := func(m map[string]any, keys ...string) map[string]any {
		for _, k := range keys {
			m, _ = m[k].(map[string]any)
		}
		return m
	}
	items := child(opts, "properties", "encryption", "properties", "allow", "items")
	var names []string
	enum, _ := items["enum"].([]any)
	for _, n := range enum {
		name, _ := n.(string)
		names = append(names, name)
	}
	if !reflect.DeepEqual(names, spec.PermissionNames) {
		t.Errorf("options.encryption.allow's enum is %v, spec.PermissionNames %v", names, spec.PermissionNames)
	}
}

// jsonFields are the JSON names of typ's fields, embedded structs' fields
// promoted as encoding/json does, sorted.
func jsonFields(typ reflect.Type) []string {
	var fields []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Anonymous && f.Tag.Get("json") == "" {
			fields = append(fields, jsonFields(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		fields = append(fields, name)
	}
	sort.Strings(fields)
	return fields
}

// TestOpenAPI_DeclaresTheCallback: POST /v1/exports declares its callback
// with the Standard Webhooks headers the worker sends (spec's constants)
// and the Final schema as its body.
func TestOpenAPI_DeclaresTheCallback(t *testing.T) {
	raw, err := os.ReadFile("../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Callbacks map[string]map[string]map[string]struct {
				Parameters []struct {
					Name     string `yaml:"name"`
					In       string `yaml:"in"`
					Required bool   `yaml:"required"`
				} `yaml:"parameters"`
				RequestBody struct {
					Content map[string]struct {
						Schema struct {
							Ref string `yaml:"$ref"`
						} `yaml:"schema"`
					} `yaml:"content"`
				} `yaml:"requestBody"`
			} `yaml:"callbacks"`
		} `yaml:"paths"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	cb := doc.Paths["/v1/exports"]["post"].Callbacks["exportFinal"]["{$request.body#/callback/url}"]["post"]
	required := map[string]bool{}
	for _, p := range cb.Parameters {
		if p.In == "header" && p.Required {
			required[p.Name] = true
		}
	}
	for _, h := range []string{spec.WebhookIDHeader, spec.WebhookTimestampHeader, spec.WebhookSignatureHeader} {
		if !required[h] {
			t.Errorf("the callback does not declare the required header %s (declares %v)", h, required)
		}
	}
	if ref := cb.RequestBody.Content["application/json"].Schema.Ref; ref != "#/components/schemas/Final" {
		t.Errorf("the callback's body is %q, want the Final schema", ref)
	}
}
