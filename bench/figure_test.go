package bench

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		samples          []float64
		median, min, max float64
	}{
		{[]float64{3}, 3, 3, 3},
		{[]float64{5, 1, 3}, 3, 1, 5},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4},
		{[]float64{9, 2, 7, 1, 8}, 7, 1, 9},
	} {
		f := Figure{}.summarize(tc.samples)
		if f.Median != tc.median || f.Min != tc.min || f.Max != tc.max || f.N != len(tc.samples) {
			t.Errorf("summarize(%v) = median %v min %v max %v n %d, want %v %v %v %d",
				tc.samples, f.Median, f.Min, f.Max, f.N, tc.median, tc.min, tc.max, len(tc.samples))
		}
	}
}

func TestTarget(t *testing.T) {
	for _, tc := range []struct {
		median  float64
		n       int
		op      string
		value   float64
		verdict string
		text    string
	}{
		{19.9, 5, "<=", 20, VerdictMet, "≤ 20 met"},
		{20.1, 5, "<=", 20, VerdictMissed, "≤ 20 MISSED"},
		{10000, 7, ">=", 10000, VerdictMet, "≥ 10000 met"},
		{9999, 5, ">=", 10000, VerdictMissed, "≥ 10000 MISSED"},
		{2, 5, "==", 2, VerdictMet, "= 2 met"},
		{2.001, 5, "==", 2, VerdictMissed, "= 2 MISSED"},
		{19.9, 4, "<=", 20, VerdictTooFew, "≤ 20 (n<5)"},
		{20.1, 1, "<=", 20, VerdictTooFew, "≤ 20 (n<5)"},
	} {
		f := Figure{Median: tc.median, N: tc.n}.withTarget(tc.op, tc.value)
		if f.Target.Verdict != tc.verdict || f.Target.Met() != (tc.verdict == VerdictMet) {
			t.Errorf("%v (n=%d) %s %v: verdict %q, want %q", tc.median, tc.n, tc.op, tc.value, f.Target.Verdict, tc.verdict)
		}
		if s := f.Target.String(); s != tc.text {
			t.Errorf("%v (n=%d) %s %v: %q, want %q", tc.median, tc.n, tc.op, tc.value, s, tc.text)
		}
	}
}

// Each target is judged at its own size: a report at S=50 still judges the
// 64 × 50 throughput, and the single-run targets apply to S=1000 wherever
// it is measured.
func TestTargetsApplyAtTheirOwnSize(t *testing.T) {
	if !targetsAt(DefaultSteps).on || targetsAt(50).on || targetsAt(100).on {
		t.Error("single-run targets: want them at S=1000 only")
	}
	if !concurrencyTargetsAt(64, 50).on || concurrencyTargetsAt(8, 50).on || concurrencyTargetsAt(64, 3).on {
		t.Error("throughput target: want it at 64 runs of S=50 only")
	}
	sample := runSample{elapsed: 1001 * 5000, steps: 1001, mallocs: 24000, commits: -1, recordBytes: 1001 * 1290, jsonBytes: 1001 * 1300, diskBytes: -1}
	for _, steps := range []int{1000, 100} {
		figs := singleFigures(storeSpec{kind: kindMemory}, "memory", steps, []runSample{sample}, 0)
		for _, f := range figs {
			wantTarget := steps == 1000 && (f.ID == "time_per_step" || f.ID == "record_bytes_per_step")
			if (f.Target != nil) != wantTarget {
				t.Errorf("S=%d %s: target %v, want one: %v", steps, f.ID, f.Target, wantTarget)
			}
			if f.Target != nil && f.Target.Verdict != VerdictTooFew {
				t.Errorf("S=%d %s: one repetition judged %q", steps, f.ID, f.Target.Verdict)
			}
		}
	}
	notes := strings.Join(targetNotes(Options{Steps: 50, ConcurrentSteps: 50, Concurrency: DefaultConcurrency, Reps: 3}), "\n")
	for _, want := range []string{"S=50 is not the standard", "without a verdict (n<5)"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes for --steps 50 --reps 3 lack %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "throughput goal is not shown") {
		t.Errorf("notes for --steps 50 say the 64 × 50 target is not shown:\n%s", notes)
	}
}

// A durable run's time per step is judged against two floors: 5 µs a step
// over a 100 µs floor is 0.025 of 2 × 100 µs; the ratio carries the goal,
// the durable time per step none.
func TestFloorRatio(t *testing.T) {
	sample := runSample{elapsed: 1001 * 5000, steps: 1001, commits: 2002, recordBytes: 1001 * 1000, jsonBytes: 1001 * 1010, diskBytes: -1}
	samples := []runSample{sample, sample, sample, sample, sample}
	byID := map[string]Figure{}
	for _, f := range singleFigures(storeSpec{kind: kindSQLite}, "sqlite", 1000, samples, 100) {
		byID[f.ID] = f
	}
	r, ok := byID["floor_ratio"]
	if !ok || r.Median != 0.025 || r.Target == nil || !r.Target.Met() || r.Target.Goal != goalFloorRatio.row {
		t.Errorf("floor_ratio = %+v (target %+v), want 0.025 judged met against %q", r, r.Target, goalFloorRatio.row)
	}
	if f := byID["time_per_step"]; f.Target != nil {
		t.Errorf("durable time_per_step carries a goal: %+v", f.Target)
	}
	if f := byID["commits_per_step"]; f.Target == nil || !f.Target.Met() {
		t.Errorf("commits_per_step 2.00: %+v, want the = 2 goal met", f.Target)
	}
	if f := byID["record_bytes_per_step"]; f.Median != 1000 || f.Target == nil || !f.Target.Met() {
		t.Errorf("record_bytes_per_step = %+v, want 1000 meeting ≤ 1024", f)
	}
	if _, ok := singleFiguresByID(storeSpec{kind: kindMemory}, samples)["floor_ratio"]; ok {
		t.Error("the memory store has a floor ratio")
	}
	rep := Report{Figures: append([]Figure{{ID: "fsync"}}, singleFigures(storeSpec{kind: kindSQLite}, "sqlite", 1000, samples, 100)...)}
	var goals []string
	for _, f := range rep.Goals() {
		goals = append(goals, f.ID)
	}
	if got := strings.Join(goals, " "); got != "floor_ratio record_bytes_per_step commits_per_step" {
		t.Errorf("Goals() = %s", got)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "goals (median, min – max):") ||
		!regexp.MustCompile(regexp.QuoteMeta(goalFloorRatio.row)+` +sqlite +0\.025 \(0\.025 – 0\.025\) × +≤ 1\.5 +met\n`).MatchString(text.String()) {
		t.Errorf("text report lacks the goals table:\n%s", text.String())
	}
}

func singleFiguresByID(spec storeSpec, samples []runSample) map[string]Figure {
	m := map[string]Figure{}
	for _, f := range singleFigures(spec, spec.kind, 1000, samples, 0) {
		m[f.ID] = f
	}
	return m
}

func TestKiBToMB(t *testing.T) {
	// 20 MB = 20×10⁶ bytes = 19,531.25 KiB: the target is decimal.
	if got := kibToMB(19531); got >= 20 || got < 19.99 {
		t.Errorf("kibToMB(19531) = %v, want just under 20", got)
	}
	if got := kibToMB(1024); got != 1.048576 {
		t.Errorf("kibToMB(1024) = %v, want 1.048576", got)
	}
}

func TestParseStore(t *testing.T) {
	for _, tc := range []struct {
		in      string
		kind    string
		durable bool
		err     bool
	}{
		{"memory", kindMemory, false, false},
		{"sqlite", kindSQLite, true, false},
		{"postgres://u@h/db", kindPostgres, true, false},
		{"postgresql://u@h/db", kindPostgres, true, false},
		{"mysql://u@h/db", "", false, true},
		{"", "", false, true},
	} {
		s, err := parseStore(tc.in)
		if (err != nil) != tc.err || s.kind != tc.kind || (err == nil && s.durable() != tc.durable) {
			t.Errorf("parseStore(%q) = %+v, %v", tc.in, s, err)
		}
	}
}

func TestOptionsDefaultsAndValidation(t *testing.T) {
	o := Options{}.withDefaults()
	if o.Steps != 1000 || o.ConcurrentSteps != 50 || o.Reps != 5 || len(o.Concurrency) != 3 ||
		len(o.Stores) != 2 || o.TempDir == "" || len(targetNotes(o)) != 0 {
		t.Errorf("defaults: %+v", o)
	}
	if err := o.validate(); err != nil {
		t.Error(err)
	}
	for _, bad := range []Options{
		{Steps: -1}, {Reps: -2}, {Concurrency: []int{8, 0}}, {Stores: []string{"nosuchstore"}},
	} {
		if err := bad.withDefaults().validate(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	if _, err := Run(context.Background(), Options{Stores: []string{"nosuchstore"}}); err == nil {
		t.Error("Run accepted an unknown store")
	}
}

func TestRunHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, Options{Stores: []string{"memory"}, Steps: 5, ConcurrentSteps: 3, Reps: 1,
		Concurrency: []int{1}, TempDir: t.TempDir()})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run with a cancelled context: %v, want context.Canceled", err)
	}
}
