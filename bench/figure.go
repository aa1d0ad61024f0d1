package bench

import (
	"fmt"
	"slices"
	"strconv"
)

// Figure is one measured quantity: the median of its repetitions, with min
// and max.
type Figure struct {
	// Measure is the number of the measurement in the issue that defines W
	// (1 in-memory run, 2 durable run, 3 concurrency, 4 resume, 5 memory and
	// bytes).
	Measure int `json:"measure"`
	// ID names the quantity for programs: time_per_step, allocs_per_step,
	// commits_per_step, floor_ratio, record_bytes_per_step,
	// json_bytes_per_step, disk_bytes_per_step, steps_per_second,
	// resume_start_to_call, resume_entry_to_call, resume_open,
	// resume_read_plan, resume_plan, fsync, commit_round_trip, peak_rss,
	// rss_anon, peak_rss_idle, rss_anon_idle.
	ID string `json:"id"`
	// Name says what it is, for people.
	Name  string `json:"name"`
	Store string `json:"store"`
	// Steps is S of each run; Runs the number of concurrent runs.
	Steps int    `json:"steps"`
	Runs  int    `json:"runs"`
	Unit  string `json:"unit"`
	// Median, Min and Max summarize N repetitions.
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
	// Target is the goal, when it applies to this figure at these
	// sizes, with its verdict.
	Target *Target `json:"target,omitempty"`
}

// MinRepsForVerdict is the number of repetitions a figure needs before its
// median is judged against its target: the issue that defines W asks for
// the median of at least 5.
const MinRepsForVerdict = 5

// The verdicts of a Target.
const (
	VerdictMet    = "met"
	VerdictMissed = "missed"
	// VerdictTooFew: the figure has fewer than MinRepsForVerdict
	// repetitions, so it is not judged.
	VerdictTooFew = "too few repetitions"
)

// Target is a goal: a bound the median should meet.
type Target struct {
	// Goal names the row of the table the bound comes from ("" for
	// a bound of another benchmark).
	Goal string `json:"goal,omitempty"`
	// Op is "<=", ">=" or "==".
	Op    string  `json:"op"`
	Value float64 `json:"value"`
	// Verdict is VerdictMet, VerdictMissed or VerdictTooFew.
	Verdict string `json:"verdict"`
}

// Met reports whether the figure was judged and met its target.
func (t Target) Met() bool { return t.Verdict == VerdictMet }

// String gives the bound and the verdict, as in "≤ 20 met", "≤ 20 MISSED"
// or "≤ 20 (n<5)" when the figure has too few repetitions to be judged.
func (t Target) String() string { return t.Bound() + " " + t.VerdictText() }

// Bound gives the bound alone, as in "≤ 20".
func (t Target) Bound() string {
	sym := map[string]string{"<=": "≤", ">=": "≥", "==": "="}[t.Op]
	return sym + " " + strconv.FormatFloat(t.Value, 'f', -1, 64)
}

// VerdictText gives the verdict for people: "met", "MISSED" or "(n<5)".
func (t Target) VerdictText() string {
	return map[string]string{
		VerdictMet: "met", VerdictMissed: "MISSED", VerdictTooFew: fmt.Sprintf("(n<%d)", MinRepsForVerdict),
	}[t.Verdict]
}

// summarize fills the figure's statistics from its samples.
func (f Figure) summarize(samples []float64) Figure {
	s := slices.Clone(samples)
	slices.Sort(s)
	f.N = len(s)
	if f.N == 0 {
		return f
	}
	f.Min, f.Max = s[0], s[len(s)-1]
	if f.N%2 == 1 {
		f.Median = s[f.N/2]
	} else {
		f.Median = (s[f.N/2-1] + s[f.N/2]) / 2
	}
	return f
}

// withTarget attaches a target and judges the median against it, when the
// figure has at least MinRepsForVerdict repetitions.
func (f Figure) withTarget(op string, value float64) Figure {
	met := false
	switch op {
	case "<=":
		met = f.Median <= value
	case ">=":
		met = f.Median >= value
	case "==":
		met = f.Median == value
	}
	t := Target{Op: op, Value: value, Verdict: VerdictMissed}
	switch {
	case f.N < MinRepsForVerdict:
		t.Verdict = VerdictTooFew
	case met:
		t.Verdict = VerdictMet
	}
	f.Target = &t
	return f
}

// formatValue prints a figure with three significant digits or so.
func formatValue(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 1000 || v <= -1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 100 || v <= -100:
		return fmt.Sprintf("%.1f", v)
	case v >= 1 || v <= -1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
