package bench

import (
	"context"
	"errors"
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
		median float64
		op     string
		value  float64
		met    bool
	}{
		{19.9, "<=", 20, true},
		{20.1, "<=", 20, false},
		{10000, ">=", 10000, true},
		{9999, ">=", 10000, false},
		{2, "==", 2, true},
		{2.001, "==", 2, false},
	} {
		f := Figure{Median: tc.median}.withTarget(tc.op, tc.value)
		if f.Target.Met != tc.met {
			t.Errorf("%v %s %v: met = %v, want %v", tc.median, tc.op, tc.value, f.Target.Met, tc.met)
		}
		if s := f.Target.String(); strings.Contains(s, "MISSED") == tc.met {
			t.Errorf("%v %s %v: %q does not say whether it was met", tc.median, tc.op, tc.value, s)
		}
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
		len(o.Stores) != 2 || o.TempDir == "" || !o.standard() {
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
