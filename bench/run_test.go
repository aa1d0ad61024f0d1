package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/polyloop/polyloop/bench"
)

// tinyOptions are sizes at which the whole benchmark runs in a second or two.
func tinyOptions(t *testing.T) bench.Options {
	stores := []string{"memory", "sqlite"}
	if dsn := os.Getenv("POLYLOOP_TEST_POSTGRES"); dsn != "" {
		stores = append(stores, dsn)
	}
	return bench.Options{Stores: stores, Steps: 5, ConcurrentSteps: 3, Concurrency: []int{1, 2}, Reps: 1,
		TempDir: t.TempDir()}
}

func TestRunEndToEnd(t *testing.T) {
	opts := tinyOptions(t)
	var progress bytes.Buffer
	opts.Progress = &progress
	rep, err := bench.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", text.String())
	if _, err := json.Marshal(rep); err != nil {
		t.Fatal(err)
	}
	if rep.Machine.CPUs < 1 || rep.Machine.GoVersion == "" || len(rep.Stores) != len(opts.Stores) {
		t.Errorf("report does not name the machine and stores: %+v %+v", rep.Machine, rep.Stores)
	}
	if progress.Len() == 0 {
		t.Error("no progress lines")
	}
	for _, f := range rep.Figures {
		if f.N != 1 || f.Min > f.Median || f.Median > f.Max || f.Target != nil {
			t.Errorf("figure %+v: want one repetition, min ≤ median ≤ max, no target at tiny sizes", f)
		}
	}
}
