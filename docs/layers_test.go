package docs

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const layersHead = "## Layers"

// layerRow matches a row of the layer table: its number, then the packages
// of that layer as code spans ("`internal/render/`" names a folder and
// everything below it).
var layerRow = regexp.MustCompile(`(?m)^\| ([0-9]+) \| (.+) \|$`)

// layers is the layer table of ARCHITECTURE.md: a package pattern and its
// layer. A pattern is a package path relative to the module, or one ending
// in "/" for a folder and all below it.
type layers []struct {
	pattern string
	layer   int
}

func readLayers(t *testing.T) layers {
	t.Helper()
	raw, err := os.ReadFile(archPath)
	if err != nil {
		t.Fatal(err)
	}
	var ls layers
	for _, m := range layerRow.FindAllStringSubmatch(section(t, string(raw), layersHead), -1) {
		n, err := strconv.Atoi(m[1])
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range codeSpan.FindAllStringSubmatch(m[2], -1) {
			ls = append(ls, struct {
				pattern string
				layer   int
			}{p[1], n})
		}
	}
	if len(ls) == 0 {
		t.Fatalf("%s: no layer rows under %q", archPath, layersHead)
	}
	return ls
}

// of is the layer of a package: the row that names it exactly, else the
// row of the deepest folder that holds it.
func (ls layers) of(rel string) (int, bool) {
	best, layer := -1, 0
	for _, l := range ls {
		if l.pattern == rel {
			return l.layer, true
		}
		dir, ok := strings.CutSuffix(l.pattern, "/")
		if ok && (rel == dir || strings.HasPrefix(rel, dir+"/")) && len(dir) > best {
			best, layer = len(dir), l.layer
		}
	}
	return layer, best >= 0
}

// layerViolations lists every package the table does not place and every
// import of a package on a higher layer than the importer's, naming both.
func layerViolations(ls layers, pkgs []pkg) []string {
	var bad []string
	for _, p := range pkgs {
		from, ok := ls.of(p.rel)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s is on no layer of the table", p.rel))
			continue
		}
		for _, imp := range p.imports {
			to, ok := ls.of(imp)
			if ok && to > from {
				bad = append(bad, fmt.Sprintf("%s (layer %d) imports %s (layer %d): a lower layer never imports a higher one", p.rel, from, imp, to))
			}
		}
	}
	return bad
}

// TestLayersHold fails naming each import that runs up the layer table of
// ARCHITECTURE.md, and each package the table does not place.
func TestLayersHold(t *testing.T) {
	for _, v := range layerViolations(readLayers(t), modulePackages(t)) {
		t.Error(v)
	}
}

// TestLayersCatchAPlantedUpwardImport plants an import from a package of
// the lowest layer into one of the highest and checks the violation names
// both, so a table that placed everything on one layer, or a check that
// compared nothing, fails here.
func TestLayersCatchAPlantedUpwardImport(t *testing.T) {
	ls, pkgs := readLayers(t), modulePackages(t)
	low, high := -1, -1
	for i, p := range pkgs {
		l, ok := ls.of(p.rel)
		if !ok {
			continue
		}
		if low < 0 || l < mustLayer(ls, pkgs[low].rel) {
			low = i
		}
		if high < 0 || l > mustLayer(ls, pkgs[high].rel) {
			high = i
		}
	}
	if low < 0 || mustLayer(ls, pkgs[low].rel) == mustLayer(ls, pkgs[high].rel) {
		t.Fatalf("%s: the layer table puts every package on one layer", archPath)
	}
	if v := layerViolations(ls, pkgs); len(v) > 0 {
		t.Skipf("the tree already breaks the layers (TestLayersHold names it): %s", v[0])
	}
	planted := slices.Clone(pkgs)
	planted[low].imports = append(slices.Clone(planted[low].imports), pkgs[high].rel)
	v := layerViolations(ls, planted)
	if len(v) != 1 || !strings.Contains(v[0], pkgs[low].rel+" ") || !strings.Contains(v[0], " "+pkgs[high].rel+" ") {
		t.Fatalf("planting %s -> %s: violations %q, want one naming both", pkgs[low].rel, pkgs[high].rel, v)
	}
}

func mustLayer(ls layers, rel string) int {
	l, _ := ls.of(rel)
	return l
}
