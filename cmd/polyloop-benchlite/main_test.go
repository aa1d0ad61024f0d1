package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"slices"
	"testing"

	"github.com/polyloop/polyloop/bench"
)

// TestMain lets the test binary serve as the benchmark's measurement child,
// as main does.
func TestMain(m *testing.M) {
	bench.MaybeRunChild()
	os.Exit(m.Run())
}

func TestParseFlags(t *testing.T) {
	f, err := parseFlags([]string{"--store", "memory", "--store", "postgres://u@h/db?a=1,b=2", "--steps", "7", "--reps", "2", "--json"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.opts.Stores, []string{"memory", "postgres://u@h/db?a=1,b=2"}) || f.opts.Steps != 7 ||
		f.opts.Reps != 2 || !f.jsonOut || f.opts.Progress == nil {
		t.Errorf("parsed %+v", f)
	}
	for _, bad := range [][]string{{"--steps", "-1"}, {"--reps", "-3"}, {"extra"}, {"--nosuchflag"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if _, err := parseFlags([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v, want flag.ErrHelp", err)
	}
}

// TestMeasureTiny runs the benchmark through the command's report path at
// tiny sizes on the memory store, so that it cannot rot. It times nothing.
func TestMeasureTiny(t *testing.T) {
	var out, progress bytes.Buffer
	f := flags{jsonOut: true, opts: bench.Options{Stores: []string{"memory"}, Steps: 5, ConcurrentSteps: 3,
		Concurrency: []int{2}, Reps: 1, Progress: &progress, TempDir: t.TempDir()}}
	if err := measure(context.Background(), f, &out); err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out.String())
	}
	if rep.Steps != 5 || rep.Reps != 1 || len(rep.Stores) != 1 || rep.Stores[0].Name != "memory" || len(rep.Figures) == 0 {
		t.Errorf("report: steps %d, reps %d, stores %+v, %d figures", rep.Steps, rep.Reps, rep.Stores, len(rep.Figures))
	}
	if progress.Len() == 0 {
		t.Error("no progress lines")
	}
}

// --sweep runs the sweep benchmark, small here, and refuses the flags of
// the other one.
func TestSweepBenchmark(t *testing.T) {
	f, err := parseFlags([]string{"--sweep", "--sweep-runs", "66", "--reps", "1", "--json"}, io.Discard)
	if err != nil || !f.sweep || f.sweepRuns != 66 {
		t.Fatalf("parsed %+v, %v", f, err)
	}
	if _, err := parseFlags([]string{"--sweep", "--store", "memory"}, io.Discard); err == nil {
		t.Error("--sweep with --store: no error")
	}
	var out bytes.Buffer
	if err := measure(context.Background(), f, &out); err != nil {
		t.Fatal(err)
	}
	var rep bench.SweepReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Runs != 66 || len(rep.Figures) == 0 {
		t.Fatalf("report %+v, %v", rep, err)
	}
}
