package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// dist is a set of measurements (milliseconds, bytes, counts, ratios).
type dist []float64

func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (d dist) sorted() dist {
	s := slices.Clone(d)
	slices.Sort(s)
	return s
}

// pct is the nearest-rank percentile p (0 < p ≤ 100).
func (d dist) pct(p float64) float64 {
	if len(d) == 0 {
		return math.NaN()
	}
	s := d.sorted()
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// median is the middle value (mean of the two middle values for an even count).
func (d dist) median() float64 {
	if len(d) == 0 {
		return math.NaN()
	}
	s := d.sorted()
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func (d dist) min() float64 { return slices.Min(d) }
func (d dist) max() float64 { return slices.Max(d) }

// num formats a value with sensible precision.
func num(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v):
		return "–"
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// mmm is "median (min–max)" with a unit, or the single value for one run.
func (d dist) mmm(unit string) string {
	if len(d) == 1 {
		return num(d[0]) + unit
	}
	return fmt.Sprintf("%s%s (%s–%s)", num(d.median()), unit, num(d.min()), num(d.max()))
}

// pcts is "p50 X · p99 Y" over the samples, with their count.
func (d dist) pcts(unit string) string {
	return fmt.Sprintf("p50 %s%s · p99 %s%s (n=%d, max %s)", num(d.pct(50)), unit, num(d.pct(99)), unit, len(d), num(d.max()))
}

// ratio formats a ratio as "1.07×".
func ratio(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return num(v) + "×"
}

// ratios divides a by b element-wise (runs paired by index).
func ratios(a, b dist) dist {
	var out dist
	for i := range min(len(a), len(b)) {
		if b[i] > 0 {
			out = append(out, a[i]/b[i])
		}
	}
	return out
}
