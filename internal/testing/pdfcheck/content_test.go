package pdfcheck

import (
	"slices"
	"testing"
)

func TestScan(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		mcids         []int
		artifacts     []string
		problems      int
	}{
		{"ids", "/P <</MCID 0 >>BDC (a\\) b) Tj EMC /Span<</MCID 1>> BDC EMC", []int{0, 1}, nil, 0},
		{"artifact form", "/Artifact <</Type /Pagination>> BDC q /Fm1 Do Q EMC /Fm2 Do", nil, []string{"Fm1"}, 0},
		{"an id inside an artifact", "/Artifact BMC /P <</MCID 3>> BDC EMC EMC", []int{3}, nil, 1},
		{"an id twice", "/P <</MCID 2>> BDC EMC /P <</MCID 2>> BDC EMC", []int{2, 2}, nil, 1},
		{"unbalanced", "/P <</MCID 0>> BDC EMC EMC /X BMC", []int{0}, nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := scan([]byte(tc.content))
			if !slices.Equal(s.mcids, tc.mcids) || !slices.Equal(s.artifactDo, tc.artifacts) || len(s.problems) != tc.problems {
				t.Errorf("scan = ids %v, artifacts %v, problems %q; want %v, %v, %d problems", s.mcids, s.artifactDo, s.problems, tc.mcids, tc.artifacts, tc.problems)
			}
		})
	}
}
