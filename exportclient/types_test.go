package exportclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/queue/fleet"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// wirePairs are the public types and the worker's types they stand for.
var wirePairs = []struct{ public, internal reflect.Type }{
	{reflect.TypeFor[Payload](), reflect.TypeFor[spec.Request]()},
	{reflect.TypeFor[PayloadSource](), reflect.TypeFor[spec.RequestSource]()},
	{reflect.TypeFor[Credentials](), reflect.TypeFor[spec.Credentials]()},
	{reflect.TypeFor[Cookie](), reflect.TypeFor[spec.Cookie]()},
	{reflect.TypeFor[Chapter](), reflect.TypeFor[spec.Chapter]()},
	{reflect.TypeFor[Options](), reflect.TypeFor[spec.Options]()},
	{reflect.TypeFor[Margins](), reflect.TypeFor[spec.Margins]()},
	{reflect.TypeFor[PageOptions](), reflect.TypeFor[spec.PageOptions]()},
	{reflect.TypeFor[Metadata](), reflect.TypeFor[spec.Metadata]()},
	{reflect.TypeFor[Watermark](), reflect.TypeFor[spec.Watermark]()},
	{reflect.TypeFor[Encryption](), reflect.TypeFor[spec.Encryption]()},
	{reflect.TypeFor[Callback](), reflect.TypeFor[spec.Callback]()},
	{reflect.TypeFor[Result](), reflect.TypeFor[spec.Result]()},
	{reflect.TypeFor[Warning](), reflect.TypeFor[spec.Warning]()},
	{reflect.TypeFor[ChapterCounts](), reflect.TypeFor[spec.ChapterCounts]()},
	{reflect.TypeFor[Final](), reflect.TypeFor[spec.Final]()},
	{reflect.TypeFor[FieldError](), reflect.TypeFor[spec.FieldError]()},
	{reflect.TypeFor[OlderWorker](), reflect.TypeFor[fleet.Worker]()},
}

// shape describes a type as the wire sees it: for a struct, each exported
// field by its JSON name and tag options (embedded structs inlined, as
// encoding/json does) with the shape of its type; otherwise its kind.
// Named types are described by structure, not by name, so a public type and
// the worker's compare equal exactly when their JSON does.
func shape(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return "*" + shape(t.Elem())
	case reflect.Slice:
		return "[]" + shape(t.Elem())
	case reflect.Map:
		return "map[" + shape(t.Key()) + "]" + shape(t.Elem())
	case reflect.Struct:
		fields := structFields(t)
		names := slices.Sorted(func(yield func(string) bool) {
			for n := range fields {
				if !yield(n) {
					return
				}
			}
		})
		var b strings.Builder
		b.WriteString("{")
		for _, n := range names {
			fmt.Fprintf(&b, "%s %s; ", n, fields[n])
		}
		b.WriteString("}")
		return b.String()
	default:
		return t.Kind().String()
	}
}

// structFields maps the JSON name (with its tag options) of each exported
// field of t to the shape of its type.
func structFields(t reflect.Type) map[string]string {
	out := map[string]string{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			for n, s := range structFields(f.Type) {
				out[n] = s
			}
			continue
		}
		name := tag
		if name == "" || strings.HasPrefix(name, ",") {
			name = f.Name + name
		}
		out[name] = shape(f.Type)
	}
	return out
}

// TestTypes_MatchTheWorkers: every public wire type has exactly the fields,
// JSON names, tag options and kinds of the worker's type it stands for, so
// a field added on either side fails here until the other has it.
func TestTypes_MatchTheWorkers(t *testing.T) {
	for _, p := range wirePairs {
		t.Run(p.public.Name(), func(t *testing.T) {
			pub, in := structFields(p.public), structFields(p.internal)
			for n, s := range in {
				switch got, ok := pub[n]; {
				case !ok:
					t.Errorf("%s has no field %q of %s (%s)", p.public, n, p.internal, s)
				case got != s:
					t.Errorf("%s field %q is %s; %s has %s", p.public, n, got, p.internal, s)
				}
			}
			for n := range pub {
				if _, ok := in[n]; !ok {
					t.Errorf("%s has field %q, which %s lacks", p.public, n, p.internal)
				}
			}
		})
	}
}

// fill sets every field of v, recursively, to a value other than its zero:
// pointers point to filled values, slices and maps hold one filled element.
// seed makes the values differ between fields.
func fill(v reflect.Value, seed *int) {
	*seed++
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", *seed))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*seed))
	case reflect.Float64:
		v.SetFloat(float64(*seed) + 0.5)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), seed)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), seed)
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, seed)
		fill(e, seed)
		v.SetMapIndex(k, e)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), seed)
			}
		}
	default:
		panic("fill: no rule for " + v.Kind().String())
	}
}

func filled[T any]() T {
	var v T
	seed := 0
	fill(reflect.ValueOf(&v).Elem(), &seed)
	return v
}

// roundTrip checks a conversion pair on a fully populated public value:
// its conversion equals what its JSON decodes to on the worker's side, the
// worker's value encodes to the same JSON, and converting back gives the
// value itself.
func roundTrip[P, S any](t *testing.T, toSpec func(P) S, fromSpec func(S) P) {
	t.Helper()
	p := filled[P]()
	pj, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var viaJSON S
	if err := json.Unmarshal(pj, &viaJSON); err != nil {
		t.Fatal(err)
	}
	s := toSpec(p)
	if !reflect.DeepEqual(s, viaJSON) {
		t.Errorf("%T converts to\n%+v\nbut its JSON decodes to\n%+v", p, s, viaJSON)
	}
	sj, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if string(sj) != string(pj) {
		t.Errorf("%T encodes as\n%s\nits conversion %T as\n%s", p, pj, s, sj)
	}
	if back := fromSpec(s); !reflect.DeepEqual(back, p) {
		t.Errorf("%T converted there and back is\n%+v\nwant\n%+v", p, back, p)
	}
}

// TestTypes_ConvertEveryField: the conversions at the boundary carry every
// field, both ways, as the JSON does.
func TestTypes_ConvertEveryField(t *testing.T) {
	t.Run("Payload", func(t *testing.T) { roundTrip(t, Payload.spec, publicPayload) })
	t.Run("Result", func(t *testing.T) { roundTrip(t, Result.spec, publicResult) })
	t.Run("Final", func(t *testing.T) { roundTrip(t, Final.spec, publicFinal) })
	t.Run("OlderWorker", func(t *testing.T) {
		w := filled[fleet.Worker]()
		if got := publicOlderWorkers([]fleet.Worker{w}); !reflect.DeepEqual(got, []OlderWorker{OlderWorker(w)}) || got[0].String() != w.String() {
			t.Errorf("OlderWorker of %+v is %+v (%s)", w, got, got[0])
		}
	})
	t.Run("FieldError", func(t *testing.T) {
		fe := filled[spec.FieldError]()
		var got *FieldError
		if !errors.As(publicErr(errors.Join(&fe)), &got) || got.Field != fe.Field || got.Rule != fe.Rule || !errors.Is(got, ErrInvalid) {
			t.Errorf("FieldError of %+v is %+v", fe, got)
		}
	})
}

// TestErrors_ArePublicFieldErrors: the validation errors callers see are
// *FieldError (errors.As), match ErrInvalid and, for an envelope-only
// field, ErrEnvelopeOnly, with the worker's messages.
func TestErrors_ArePublicFieldErrors(t *testing.T) {
	// Nothing listens there, and validation dials nothing.
	c, err := New(Config{Redis: asynq.RedisClientOpt{Addr: "127.0.0.1:" + strconv.Itoa(testsupport.FreePort(t))}, AllowedHosts: "docs.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_, decodeErr := DecodePayload([]byte(`{"v":1,"manual_id":"m","version":"1","source":{"html_ref":{"sha256":"x"}}}`))
	tests := []struct {
		name         string
		err          error
		field        string
		envelopeOnly bool
	}{
		{"validate", c.Validate(Payload{V: PayloadVersion, ManualID: "m", Version: "1", Source: PayloadSource{URL: "https://elsewhere.example.com/"}}), "source.url", false},
		{"decode, envelope-only", decodeErr, "source.html_ref", true},
		{"decode, unknown field", func() error { _, err := DecodePayload([]byte(`{"v":1,"nope":1}`)); return err }(), "nope", false},
		{"client name", func() error { _, err := c.settings([]EnqueueOption{ForClient("bad name!")}); return err }(), "client", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fe *FieldError
			if !errors.As(tt.err, &fe) {
				t.Fatalf("%v (%T) holds no *exportclient.FieldError", tt.err, tt.err)
			}
			if fe.Field != tt.field {
				t.Errorf("field %q, want %q (%v)", fe.Field, tt.field, tt.err)
			}
			if !errors.Is(tt.err, ErrInvalid) || errors.Is(tt.err, ErrEnvelopeOnly) != tt.envelopeOnly {
				t.Errorf("%v: Is(ErrInvalid) %v, Is(ErrEnvelopeOnly) %v, want true, %v", tt.err, errors.Is(tt.err, ErrInvalid), errors.Is(tt.err, ErrEnvelopeOnly), tt.envelopeOnly)
			}
			var internal *spec.FieldError
			if errors.As(tt.err, &internal) && !strings.Contains(tt.err.Error(), internal.Error()) {
				t.Errorf("message %q lost the worker's %q", tt.err, internal)
			}
		})
	}
}

// publicMethods are the methods exportclient's types may have: what a
// caller uses. A method of the worker's (applying credentials, resolving
// print settings, building an envelope) is no public API.
var publicMethods = map[string][]string{
	"Client":            {"Artifact", "Cancel", "Close", "CompleteStored", "Enqueue", "EnqueuePayload", "Queue", "Status", "Validate", "Wait"},
	"FieldError":        {"Error", "Is"},
	"OlderWorker":       {"String"},
	"OlderWorkersError": {"Error", "Is"},
	"Payload":           {"ArtifactKey"},
	"Request":           {"Payload"},
	"Status":            {"Final"},
	"Warning":           {"String"},
}

// TestAPI_OwnTypesOnlyCallerMethods: what `go doc ./exportclient` shows:
// no type is an alias (an alias of an internal type would publish its
// methods, which go doc does not list), and each type's methods are the
// ones above.
func TestAPI_OwnTypesOnlyCallerMethods(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	files := []*ast.File{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range g.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok && ts.Assign.IsValid() && ts.Name.IsExported() {
					t.Errorf("type %s is an alias (%s): declare the type, so that its methods are this package's", ts.Name, fset.Position(ts.Pos()))
				}
			}
		}
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/pdfexport/pdfexport/exportclient")
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range p.Types {
		var got []string
		for _, m := range typ.Methods {
			got = append(got, m.Name)
		}
		slices.Sort(got)
		if want := publicMethods[typ.Name]; !slices.Equal(got, want) {
			t.Errorf("%s has methods %v, want %v (a caller's only; add one here only when a caller needs it)", typ.Name, got, want)
		}
	}
}

// firstField is the field of the first *FieldError in err, or "".
func firstField(err error) string {
	var fe *FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	return ""
}
