package export

import (
	"slices"
	"testing"
)

// TestLargestAtBothEnds: with sizes, each end of the order takes its
// chapters largest first and the ends meet at the smallest; without, the
// order is the manual's.
func TestLargestAtBothEnds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		todo  []int
		sizes []int64
		want  []int
	}{
		{"no sizes", []int{0, 1, 2, 3}, nil, []int{0, 1, 2, 3}},
		{"sizes all unknown", []int{0, 1, 2}, []int64{0, 0, 0}, []int{0, 1, 2}},
		{"one chapter", []int{0}, []int64{5}, []int{0}},
		// sorted 3 (40), 1 (30), 0 (20), 2 (10): front 3, 0; back 1, 2
		// reversed: 2, 1.
		{"four", []int{0, 1, 2, 3}, []int64{20, 30, 10, 40}, []int{3, 0, 2, 1}},
		// sorted 4 (50), 2 (40), 0 (30), 3 (20), 1 (10): front 4, 0, 1;
		// back 2, 3 reversed: 3, 2.
		{"five", []int{0, 1, 2, 3, 4}, []int64{30, 10, 40, 20, 50}, []int{4, 0, 1, 3, 2}},
		{"equal sizes, in the order sorted stably", []int{0, 1, 2, 3}, []int64{7, 7, 7, 7}, []int{0, 2, 3, 1}},
		{"duplicates left out of todo", []int{0, 2, 3}, []int64{10, 10, 30, 20}, []int{2, 0, 3}},
		{"a size unknown counts as smallest", []int{0, 1, 2}, []int64{0, 10, 20}, []int{2, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := largestAtBothEnds(slices.Clone(tc.todo), tc.sizes)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("largestAtBothEnds(%v, %v) = %v, want %v", tc.todo, tc.sizes, got, tc.want)
			}
			// Each end, read toward the middle, never grows.
			half := (len(got) + 1) / 2
			front, back := got[:half], slices.Clone(got[half:])
			slices.Reverse(back)
			for _, end := range [][]int{front, back} {
				for k := 1; k < len(end); k++ {
					if sizeOf(tc.sizes, end[k]) > sizeOf(tc.sizes, end[k-1]) {
						t.Errorf("%v: chapter %d after a smaller one", got, end[k])
					}
				}
			}
		})
	}
}

func sizeOf(sizes []int64, i int) int64 {
	if i < len(sizes) {
		return sizes[i]
	}
	return 0
}
