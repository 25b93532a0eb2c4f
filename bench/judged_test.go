package main

import "testing"

// TestRatiosOf_EachRoundAgainstItsOwnGotenberg: the judged ratios are the
// medians of each round's rows against the faster Gotenberg row of the
// same round, so a round measured while the machine was slow counts as a
// ratio, not as a slow row set against another round's fast one.
func TestRatiosOf_EachRoundAgainstItsOwnGotenberg(t *testing.T) {
	row := func(wallS, cpu float64) manualRow { return manualRow{wallMS: wallS * 1000, cpu: cpu} }
	round := func(first, site, b, c manualRow) nodeRound {
		return nodeRound{first: first, site: site, gotenberg: []manualRow{c, b}}
	}
	for _, tc := range []struct {
		name   string
		rounds []nodeRound
		want   judgedRatios
	}{
		{
			// The rounds' own ratios are 0.5×, 0.58× and 0.4×: their
			// median is 0.5×. The medians of the rows would set round 3's
			// 12 s export against round 2's 26 s Gotenberg (0.46×).
			name: "rows of different rounds",
			rounds: []nodeRound{
				round(row(10, 20), row(10, 20), row(40, 80), row(20, 40)),
				round(row(15, 30), row(15, 30), row(60, 120), row(26, 52)),
				round(row(12, 24), row(12, 24), row(56, 112), row(30, 60)),
			},
			want: judgedRatios{firstWall: 0.5, firstCPU: 0.5, siteWall: 0.5, siteCPU: 0.5},
		},
		{
			// (b) is the faster Gotenberg in round 2: that round's ratios
			// are against it, on wall and on CPU.
			name: "the faster of (b) and (c) per round",
			rounds: []nodeRound{
				round(row(12, 24), row(10, 25), row(50, 90), row(20, 40)),
				round(row(9, 30), row(6, 18), row(15, 60), row(30, 50)),
				round(row(12, 24), row(11, 22), row(50, 90), row(20, 40)),
			},
			want: judgedRatios{firstWall: 0.6, firstCPU: 0.6, siteWall: 0.5, siteCPU: 0.55},
		},
		{
			name:   "a round without Gotenberg judges nothing",
			rounds: []nodeRound{round(row(10, 20), row(10, 20), row(40, 80), row(20, 40)), {first: row(10, 20), site: row(10, 20)}},
			want:   judgedRatios{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ratiosOf(tc.rounds); got != tc.want {
				t.Errorf("ratiosOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}
