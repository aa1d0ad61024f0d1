package sweepfile_test

import (
	"context"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/sweepfile"
)

// The sweep file's time limits replace the agent file's, enter each run's
// snapshot, and stop the runs with their own stop reasons, counted in the
// sweep's progress and statistics. Each model call takes 40 ms and never
// ends the run (a reply without a tool call is Invalid); the agent file's
// own limits (1h) would never be reached.
func TestSweepTimeLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key  string
		want polyloop.StopReason
	}{{"time_limit", polyloop.StopTimeLimit}, {"working_limit", polyloop.StopWorkingLimit}} {
		t.Run(tc.key, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			write(t, dir, "slow.yaml", "name: slow\nmodel:\n  provider: script\n  script:\n"+
				"    - {text: hmm, delay_ms: 40}\n    - {text: hmm, delay_ms: 40}\n    - {text: hmm, delay_ms: 40}\n"+
				"    - {text: hmm, delay_ms: 40}\n    - {text: hmm, delay_ms: 40}\n    - {text: hmm, delay_ms: 40}\n"+
				"parser: {kind: toolcall, options: {require_action: true}}\n"+
				"limits: {max_steps: 6, time_limit: 1h, working_limit: 1h}\n")
			write(t, dir, "tasks.jsonl", `{"id": "q1", "input": "think"}`+"\n"+`{"id": "q2", "input": "think"}`+"\n")
			path := write(t, dir, "sweep.yaml", "name: slow\nagents: [slow.yaml]\ntasks: tasks.jsonl\n"+tc.key+": 60ms\nscorers: [{kind: exact}]\n")
			l, err := sweepfile.Load(context.Background(), path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			store := memstore.New()
			res, err := l.Sweep.Run(context.Background(), sweep.RunOptions{Store: store})
			if err != nil || res.Progress.StopReasons[tc.want] != 2 {
				t.Fatalf("progress %+v, %v; want 2 runs stopped %s", res.Progress, err, tc.want)
			}
			st, err := sweep.ComputeStats(context.Background(), store, "slow", sweep.StatsOptions{By: sweep.ByAgent})
			if err != nil || len(st.Groups) != 1 || st.Groups[0].OutcomeStopReasons[tc.want] != 2 || st.Groups[0].Runs.StopReasons[tc.want] != 2 {
				t.Fatalf("stats %+v, %v; want 2 outcomes and runs stopped %s", st, err, tc.want)
			}
			runs, err := store.ListRuns(context.Background(), polyloop.RunFilter{})
			if err != nil || len(runs) != 2 {
				t.Fatalf("runs %v, %v", runs, err)
			}
			log, err := polyloop.ReadLog(context.Background(), store, runs[0].RunID)
			if err != nil {
				t.Fatal(err)
			}
			l60, hour := 60*time.Millisecond, time.Hour
			want := polyloop.Limits{MaxSteps: 6, TimeLimit: hour, WorkingLimit: hour}
			if tc.key == "time_limit" {
				want.TimeLimit = l60
			} else {
				want.WorkingLimit = l60
			}
			if got := log.Started().Snapshot.Limits; got != want {
				t.Fatalf("snapshot limits %+v, want %+v", got, want)
			}
		})
	}
}
