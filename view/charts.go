package view

import (
	"math"
	"strconv"

	"github.com/polyloop/polyloop/internal/runstats"
)

// chart is an SVG bar chart laid out on the server: the template draws
// its bars as rects, nothing is computed in the browser.
type chart struct {
	W, H float64
	Bars []bar
	// From and To label the ends of a histogram's axis.
	From, To string
}

// bar is one bar with its label and value as text.
type bar struct {
	X, Y, W, H   float64
	Label, Value string
	TextY        float64
}

const (
	chartW, chartH = 360.0, 120.0
	barRow         = 20.0
)

// stopChart is the stop-reason distribution: one horizontal bar per
// reason, zeros included.
func stopChart(g *runstats.Group) chart {
	c := chart{W: chartW, H: barRow * float64(len(runstats.StopReasons))}
	top := 0
	for _, r := range runstats.StopReasons {
		top = max(top, g.StopReasons[r])
	}
	const labelW = 150.0
	for i, r := range runstats.StopReasons {
		n := g.StopReasons[r]
		w := 0.0
		if top > 0 {
			w = (chartW - labelW - 75) * float64(n) / float64(top)
		}
		y := float64(i) * barRow
		c.Bars = append(c.Bars, bar{X: labelW, Y: y + 3, W: w, H: barRow - 6, TextY: y + barRow - 6,
			Label: string(r), Value: strconv.Itoa(n) + " (" + pct(n, g.Finished) + ")"})
	}
	return c
}

// histogram bins sorted values: one bin per integer for a small integer
// range, else ten equal bins from the least to the greatest value; one
// bin, labelled with the value, when every value is the same.
func histogram(sorted []float64, isCost bool) chart {
	c := chart{W: chartW, H: chartH}
	if len(sorted) == 0 {
		return c
	}
	lo, hi := sorted[0], sorted[len(sorted)-1]
	c.From, c.To = label(lo, isCost), label(hi, isCost)
	if lo == hi {
		// Every value the same: one bar, labelled with the value (a range
		// around it would be made up).
		c.Bars = []bar{{X: 1, Y: 0, W: chartW - 2, H: chartH - 16, TextY: chartH - 2, Label: c.From, Value: strconv.Itoa(len(sorted))}}
		return c
	}
	bins, width := 10, (hi-lo)/10
	if integral(sorted) && hi-lo < 20 {
		bins, width = int(hi-lo)+1, 1
	}
	counts := make([]int, bins)
	for _, v := range sorted {
		i := min(int((v-lo)/width), bins-1)
		counts[i]++
	}
	top := 0
	for _, n := range counts {
		top = max(top, n)
	}
	bw := chartW / float64(bins)
	plot := chartH - 16
	for i, n := range counts {
		h := plot * float64(n) / float64(top)
		from := lo + float64(i)*width
		c.Bars = append(c.Bars, bar{X: float64(i)*bw + 1, Y: plot - h, W: bw - 2, H: h, TextY: chartH - 2,
			Label: label(from, isCost) + "–" + label(from+width, isCost), Value: strconv.Itoa(n)})
	}
	return c
}

func integral(vs []float64) bool {
	for _, v := range vs {
		if v != math.Trunc(v) {
			return false
		}
	}
	return true
}

func label(v float64, isCost bool) string {
	if isCost {
		return usd(v)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
