package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"runtime"
	"strings"
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
	if exe, _ := os.Executable(); rep.Executable.Path != exe || rep.Executable.Bytes <= 0 {
		t.Errorf("report names executable %+v, want %s and its size", rep.Executable, exe)
	}
	got := map[string]int{}
	for _, f := range rep.Figures {
		if f.N != 1 || f.Min > f.Median || f.Median > f.Max || f.Target != nil {
			t.Errorf("figure %+v: want one repetition, min ≤ median ≤ max, no target at tiny sizes", f)
		}
		if f.Median <= 0 && f.ID != "resume_plan" {
			t.Errorf("figure %s %s is %v", f.Store, f.ID, f.Median)
		}
		got[f.Store+" "+f.ID]++
	}
	for key, n := range wantFigures(rep.Stores) {
		if got[key] != n {
			t.Errorf("%d figures %q, want %d", got[key], key, n)
		}
	}
	for _, line := range []string{"machine: ", "go1.", "store sqlite: ", "commits per step", "process start → first new call", "÷ (2 × floor)", "executable: "} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("text report lacks %q", line)
		}
	}
}

// wantFigures lists the figures each store must have at the tiny sizes (two
// concurrencies), with their counts.
func wantFigures(stores []bench.StoreInfo) map[string]int {
	want := map[string]int{"- peak_rss_idle": 1, "- rss_anon_idle": 1}
	if runtime.GOOS != "linux" {
		want["- peak_rss_idle"], want["- rss_anon_idle"] = 0, 0
	}
	for _, s := range stores {
		n := s.Name + " "
		want[n+"time_per_step"] = 1
		want[n+"allocs_per_step"] = 1
		want[n+"record_bytes_per_step"] = 1
		want[n+"json_bytes_per_step"] = 1
		want[n+"steps_per_second"] = 2
		want[n+"resume_entry_to_call"] = 1
		want[n+"resume_read_plan"] = 1
		want[n+"resume_plan"] = 1
		want[n+"peak_rss"], want[n+"rss_anon"] = 2, 2 // one run of S steps; the largest concurrency
		switch s.Name {
		case "sqlite":
			want[n+"fsync"] = 1
		case "memory":
		default:
			want[n+"commit_round_trip"] = 1
		}
		if s.Name != "memory" {
			want[n+"floor_ratio"] = 1
			want[n+"commits_per_step"] = 1 + 2
			want[n+"disk_bytes_per_step"] = 1
			want[n+"resume_start_to_call"] = 1
			want[n+"resume_open"] = 1
		}
		if runtime.GOOS != "linux" {
			want[n+"peak_rss"], want[n+"rss_anon"] = 0, 0
		}
	}
	return want
}
