package pdfcheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// Poppler reads a PDF file the way a reader does, through poppler-utils'
// tools (pdfinfo, pdftotext, pdffonts, pdfimages): the one place the
// tests and tools run them and parse what they print. make setup installs
// poppler-utils.
type Poppler struct {
	Path string
	// UserPassword opens an encrypted file (the tools' -upw); "" for none.
	UserPassword string
}

// PopplerTools are the programs Poppler runs.
var PopplerTools = []string{"pdfinfo", "pdftotext", "pdffonts", "pdfimages"}

// MissingPopplerTools returns the PopplerTools not on PATH.
func MissingPopplerTools() []string {
	var missing []string
	for _, name := range PopplerTools {
		if _, err := exec.LookPath(name); err != nil {
			missing = append(missing, name)
		}
	}
	return missing
}

// run runs a poppler tool on the file with args before the path and after
// it, and returns its standard output; a failure carries its standard
// error (an encrypted file opened without its password fails).
func (p Poppler) run(ctx context.Context, name string, args []string, after ...string) ([]byte, error) {
	if p.UserPassword != "" {
		args = append([]string{"-upw", p.UserPassword}, args...)
	}
	cmd := exec.CommandContext(ctx, name, append(append(args, p.Path), after...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s (make setup installs poppler-utils)", name, p.Path, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// Info is what pdfinfo prints, its "Field: value" lines ("Title", "Pages",
// "Tagged", "Encrypted", "Optimized", "Page size", …), values trimmed.
type Info map[string]string

// Info runs pdfinfo.
func (p Poppler) Info(ctx context.Context) (Info, error) {
	out, err := p.run(ctx, "pdfinfo", nil)
	if err != nil {
		return nil, err
	}
	return parseInfo(string(out)), nil
}

func parseInfo(out string) Info {
	info := Info{}
	for line := range strings.SplitSeq(out, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			info[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return info
}

// Pages is the page count pdfinfo read.
func (i Info) Pages() (int, error) {
	v, ok := i["Pages"]
	if !ok {
		return 0, errors.New("pdfinfo printed no page count")
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("pdfinfo: page count %q", v)
	}
	return n, nil
}

// Pages is the page count pdfinfo reads from the file: an independent
// check of a PDF its producer counted itself.
func (p Poppler) Pages(ctx context.Context) (int, error) {
	info, err := p.Info(ctx)
	if err != nil {
		return 0, err
	}
	n, err := info.Pages()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", p.Path, err)
	}
	return n, nil
}

// TextMode is how pdftotext orders the text it extracts.
type TextMode int

const (
	// Reading is pdftotext's default: the text in reading order.
	Reading TextMode = iota
	// Layout keeps the page's physical layout (-layout).
	Layout
	// Raw keeps the order of the content stream (-raw): a rotated
	// watermark's letters on lines of their own, but in order.
	Raw
)

// AllPages, as first and last page, extracts every page.
const AllPages = 0

// Text runs pdftotext on pages first to last (from 1; AllPages for
// either end: the file's first or last page). Pages are separated by form
// feeds.
func (p Poppler) Text(ctx context.Context, mode TextMode, first, last int) (string, error) {
	var args []string
	switch mode {
	case Layout:
		args = append(args, "-layout")
	case Raw:
		args = append(args, "-raw")
	}
	if first != AllPages {
		args = append(args, "-f", strconv.Itoa(first))
	}
	if last != AllPages {
		args = append(args, "-l", strconv.Itoa(last))
	}
	out, err := p.run(ctx, "pdftotext", args, "-")
	return string(out), err
}

// PageText is the text of one page.
func (p Poppler) PageText(ctx context.Context, mode TextMode, page int) (string, error) {
	return p.Text(ctx, mode, page, page)
}

// Font is a row of pdffonts: a font the file uses.
type Font struct {
	Name, Type, Encoding string
	// Embedded, Subset and Unicode are the emb, sub and uni columns.
	Embedded, Subset, Unicode bool
	// Object is the font's object "number generation".
	Object string
}

// Fonts runs pdffonts.
func (p Poppler) Fonts(ctx context.Context) ([]Font, error) {
	out, err := p.run(ctx, "pdffonts", nil)
	if err != nil {
		return nil, err
	}
	return parseFonts(string(out))
}

// parseFonts reads pdffonts' table from the right: a type may hold
// spaces ("Type 1C", "CID TrueType"), and a long name pushes the columns
// after it out of line, but a name or an encoding holds none.
func parseFonts(out string) ([]Font, error) {
	var fonts []Font
	for i, line := range tableRows(out) {
		f := strings.Fields(line)
		n := len(f)
		if n < 8 {
			return nil, fmt.Errorf("pdffonts: row %d %q: want name, type, encoding, emb, sub, uni, object", i+1, line)
		}
		fonts = append(fonts, Font{Name: f[0], Type: strings.Join(f[1:n-6], " "), Encoding: f[n-6],
			Embedded: f[n-5] == "yes", Subset: f[n-4] == "yes", Unicode: f[n-3] == "yes", Object: f[n-2] + " " + f[n-1]})
	}
	return fonts, nil
}

// Image is a row of pdfimages -list: an image drawn on a page.
type Image struct {
	Page, Num     int
	Type          string // image, mask, smask, stencil
	Width, Height int
	Color         string // gray, rgb, cmyk, index, …
	Components    int
	BitsPerComp   int
	Encoding      string // image, jpeg, jpx, ccitt, jbig2, …
	Interpolate   bool
	Object        string // "number generation"
	XPPI, YPPI    int
	Size          string // as printed: "1024B", "12.3K"
	Ratio         string // compressed size to raw, as printed: "4.3%"
}

// Images runs pdfimages -list.
func (p Poppler) Images(ctx context.Context) ([]Image, error) {
	out, err := p.run(ctx, "pdfimages", []string{"-list"})
	if err != nil {
		return nil, err
	}
	return parseImages(string(out))
}

func parseImages(out string) ([]Image, error) {
	var images []Image
	for i, line := range tableRows(out) {
		f := strings.Fields(line)
		if len(f) != 16 {
			return nil, fmt.Errorf("pdfimages -list: row %d %q: %d columns, want 16", i+1, line, len(f))
		}
		var nums [8]int
		for j, col := range []int{0, 1, 3, 4, 6, 7, 12, 13} {
			n, err := strconv.Atoi(f[col])
			if err != nil {
				return nil, fmt.Errorf("pdfimages -list: row %d %q: column %d: %w", i+1, line, col+1, err)
			}
			nums[j] = n
		}
		images = append(images, Image{Page: nums[0], Num: nums[1], Type: f[2], Width: nums[2], Height: nums[3], Color: f[5],
			Components: nums[4], BitsPerComp: nums[5], Encoding: f[8], Interpolate: f[9] == "yes", Object: f[10] + " " + f[11],
			XPPI: nums[6], YPPI: nums[7], Size: f[14], Ratio: f[15]})
	}
	return images, nil
}

// tableRows returns the non-empty lines after the dashed line under a
// table's header (pdffonts, pdfimages -list); none when there is no table.
func tableRows(out string) []string {
	lines := strings.Split(out, "\n")
	for i, line := range lines {
		if strings.HasPrefix(line, "---") {
			var rows []string
			for _, row := range lines[i+1:] {
				if strings.TrimSpace(row) != "" {
					rows = append(rows, row)
				}
			}
			return rows
		}
	}
	return nil
}
