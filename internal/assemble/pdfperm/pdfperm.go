// Package pdfperm maps the names of options.encryption.allow
// (spec.PermissionNames) onto PDF permission bits (ISO 32000-2, table 22),
// for every writer of an encrypted PDF: the worker's post-processing and
// the Gotenberg routes' PDF engines.
package pdfperm

import "github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"

// bits are the permission bits of each name.
var bits = map[string]model.PermissionFlags{
	"print":                 model.PermissionPrintRev2,
	"print_high":            model.PermissionPrintRev2 | model.PermissionPrintRev3,
	"copy":                  model.PermissionExtract,
	"modify":                model.PermissionModify,
	"annotate":              model.PermissionModAnnFillForm,
	"fill_forms":            model.PermissionFillRev3,
	"extract_accessibility": model.PermissionExtractRev3,
	"assemble":              model.PermissionAssembleRev3,
}

// Flags are the permissions a reader with the user password gets when
// allowed names: none (pdfcpu's PermissionsNone, the reserved bits set)
// plus each name's bits. A name outside spec.PermissionNames adds nothing;
// callers pass validated names.
func Flags(names []string) model.PermissionFlags {
	f := model.PermissionsNone
	for _, n := range names {
		f |= bits[n]
	}
	return f
}
