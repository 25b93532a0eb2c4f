package pdfperm

import (
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// TestFlags: each accepted name sets its bits of ISO 32000-2's table 22
// (bit n is 1<<(n-1)) and no other; no name leaves a reader none.
func TestFlags(t *testing.T) {
	bit := func(ns ...int) model.PermissionFlags {
		var f model.PermissionFlags
		for _, n := range ns {
			f |= 1 << (n - 1)
		}
		return f
	}
	want := map[string]model.PermissionFlags{
		"print":                 bit(3),
		"print_high":            bit(3, 12),
		"copy":                  bit(5),
		"modify":                bit(4),
		"annotate":              bit(6),
		"fill_forms":            bit(9),
		"extract_accessibility": bit(10),
		"assemble":              bit(11),
	}
	if len(want) != len(spec.PermissionNames) {
		t.Fatalf("the test knows %d names, spec.PermissionNames has %d", len(want), len(spec.PermissionNames))
	}
	for _, name := range spec.PermissionNames {
		w, ok := want[name]
		if !ok {
			t.Errorf("%s: no expected bits", name)
			continue
		}
		if got := Flags([]string{name}); got != model.PermissionsNone|w {
			t.Errorf("Flags(%s) = %#x, want %#x", name, got, model.PermissionsNone|w)
		}
	}
	if got := Flags(nil); got != model.PermissionsNone {
		t.Errorf("Flags(nil) = %#x, want PermissionsNone %#x", got, model.PermissionsNone)
	}
	if got := Flags([]string{"copy", "modify"}); got != model.PermissionsNone|bit(4, 5) {
		t.Errorf("Flags(copy, modify) = %#x", got)
	}
}
