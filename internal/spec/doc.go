// Package spec is the wire contract of pdfexport: the pdf:export task payload
// (version 1), its validation rules, the canonical artifact key and the result
// document a finished task writes.
//
// It depends on the standard library only, so the public exportclient package
// and the worker share exactly one definition of what a valid request is and
// which artifact it names. It does not know about Redis, Chromium or storage.
package spec
