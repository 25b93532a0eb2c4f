package engine

import (
	"fmt"
	"sync"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
)

// File is a named PDF (or, for embeds, any file) in memory.
type File struct {
	Name string
	Data []byte
}

// InputError is an operation's refusal of a PDF or option its caller
// sent: the document is not one pdfcpu can read, or an option does not
// fit it.
type InputError struct {
	File string // the file's name; empty when the error is not one file's
	Err  error
}

func (e *InputError) Error() string {
	if e.File == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *InputError) Unwrap() error { return e.Err }

var disableConfigDir sync.Once

// Conf is pdfcpu's configuration for a caller's PDFs: no configuration
// directory on disk, relaxed validation (PDFs in the wild bend the rules).
func Conf() *model.Configuration {
	disableConfigDir.Do(api.DisableConfigDir)
	conf := model.NewDefaultConfiguration()
	conf.ValidationMode = model.ValidationRelaxed
	return conf
}
