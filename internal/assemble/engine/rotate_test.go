package engine

import (
	"context"
	"errors"
	"testing"
)

// TestRotate: the pages selected turn by the angle, added to the turn
// they had; the others stay.
func TestRotate(t *testing.T) {
	var b pdfBuilder
	doc := b.Bytes(b.TextPages(func(page int) string {
		if page == 2 {
			return "/Rotate 90"
		}
		return ""
	}, "one", "two", "three"))
	for _, tc := range []struct {
		name string
		opts RotateOptions
		want []int
	}{
		{"all", RotateOptions{Angle: 90}, []int{90, 180, 90}},
		{"1 and 3", RotateOptions{Angle: 270, Pages: "1,3"}, []int{270, 90, 270}},
		{"from 2", RotateOptions{Angle: 180, Pages: "2-"}, []int{0, 270, 180}},
		{"none there", RotateOptions{Angle: 90, Pages: "7"}, []int{0, 90, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Rotate(context.Background(), doc, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			ctx := readBack(t, out)
			for i, want := range tc.want {
				page, _, inh, err := ctx.PageDict(i+1, false)
				if err != nil {
					t.Fatal(err)
				}
				got := inh.Rotate
				if r := page.IntEntry("Rotate"); r != nil {
					got = *r
				}
				if (got%360+360)%360 != want {
					t.Errorf("page %d turned %d, want %d", i+1, got, want)
				}
			}
		})
	}
	for _, bad := range []RotateOptions{{Angle: 45}, {Angle: 0}, {Angle: 90, Pages: "x"}} {
		if _, err := Rotate(context.Background(), doc, bad); !errors.As(err, new(*InputError)) {
			t.Errorf("%+v: %v, want an InputError", bad, err)
		}
	}
}
