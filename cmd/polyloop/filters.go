package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runstats"
	"github.com/spf13/pflag"
)

// filterFlags are the run filters of ls and stats.
type filterFlags struct {
	agent, stopReason, task string
	// hash is --hash, the agent configuration hash (Snapshot.AgentHash,
	// the key of stats --by hash); snapshot is --snapshot, the snapshot
	// hash (task included: the same inputs).
	hash, snapshot       string
	finished, unfinished bool
	since, until         string
	limit                int
}

func (f *filterFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.agent, "agent", "", "only runs of this agent (its name)")
	fs.StringVar(&f.hash, "hash", "", "only runs of this agent configuration hash (the key of stats --by hash; a prefix of 12 or more hex digits will do); reads each run's first record")
	fs.StringVar(&f.snapshot, "snapshot", "", "only runs with this snapshot hash (the agent configuration and the task: the same inputs)")
	fs.StringVar(&f.task, "task", "", "only runs whose task contains this text (case-sensitive; its first 1,000 characters)")
	fs.BoolVar(&f.finished, "finished", false, "only finished runs")
	fs.BoolVar(&f.unfinished, "unfinished", false, "only unfinished runs")
	fs.StringVar(&f.stopReason, "stop-reason", "", "only runs finished with this stop reason")
	fs.StringVar(&f.since, "since", "", "only runs started at or after: RFC 3339, YYYY-MM-DD, or a duration ago (24h)")
	fs.StringVar(&f.until, "until", "", "only runs started before: RFC 3339, YYYY-MM-DD, or a duration ago")
	fs.IntVar(&f.limit, "limit", 0, "at most this many runs (0: all)")
}

// filter turns the flags into a RunFilter, checking them.
func (f *filterFlags) filter(now time.Time) (polyloop.RunFilter, error) {
	rf := polyloop.RunFilter{Agent: f.agent, SnapshotHash: f.snapshot, StopReason: polyloop.StopReason(f.stopReason), TaskContains: f.task, Limit: f.limit}
	if f.finished && f.unfinished {
		return rf, fmt.Errorf("--finished and --unfinished exclude each other")
	}
	if f.finished || f.unfinished {
		fin := f.finished
		rf.Finished = &fin
	}
	if rf.StopReason != "" && !rf.StopReason.Valid() {
		return rf, fmt.Errorf("--stop-reason %q: expected completed, max_steps, token_budget, cost_budget, time_limit, working_limit, llm_error, env_error or resume_state_unknown", f.stopReason)
	}
	if f.limit < 0 {
		return rf, fmt.Errorf("--limit must not be negative")
	}
	if f.hash != "" && len(strings.TrimPrefix(f.hash, "sha256:")) < 12 {
		return rf, fmt.Errorf("--hash %q: give the agent configuration hash (stats --by hash shows it), or at least its first 12 hex digits", f.hash)
	}
	if f.hash != "" {
		rf.Limit = 0 // the limit applies after the hash filter (listRuns)
	}
	var err error
	if rf.StartedAfter, err = parseWhen(f.since, now); err != nil {
		return rf, fmt.Errorf("--since: %w", err)
	}
	if rf.StartedBefore, err = parseWhen(f.until, now); err != nil {
		return rf, fmt.Errorf("--until: %w", err)
	}
	return rf, nil
}

// parseWhen reads a time: RFC 3339, a date, or a duration before now.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, time.Local); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time, a YYYY-MM-DD date or a duration such as 24h", s)
}

// listRuns lists the runs the flags select, with the totals of unfinished
// runs computed from their logs (their summaries have none).
func listRuns(ctx context.Context, st store, f *filterFlags) ([]polyloop.RunSummary, error) {
	rf, err := f.filter(time.Now())
	if err != nil {
		return nil, err
	}
	runs, err := runstats.List(ctx, st, rf)
	if err != nil || f.hash == "" {
		return runs, err
	}
	hashes, err := runstats.AgentHashes(ctx, st, runs)
	if err != nil {
		return nil, err
	}
	want := strings.TrimPrefix(f.hash, "sha256:")
	kept := runs[:0]
	for _, r := range runs {
		if h := strings.TrimPrefix(hashes[r.RunID], "sha256:"); h != "" && strings.HasPrefix(h, want) {
			kept = append(kept, r)
		}
	}
	if f.limit > 0 && len(kept) > f.limit {
		kept = kept[:f.limit]
	}
	return kept, nil
}
