package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/polyloop/polyloop/sweep/ledger"
)

// runSweep is what a sweep's ledger holds of a run, for show: the run's
// coordinate and its scores with their explanations.
type runSweep struct {
	Sweep     string         `json:"sweep"`
	Agent     string         `json:"agent"`
	AgentHash string         `json:"agent_hash"`
	Task      string         `json:"task"`
	Epoch     int            `json:"epoch"`
	Attempt   int            `json:"attempt"`
	Scores    []ledger.Score `json:"scores"`
	// Failed are the scorers that could not score the run, with why.
	Failed []ledger.Score `json:"failed,omitempty"`
}

// sweepOfRun reads what the store's ledger holds of a run: nil when the
// store keeps no sweeps or the run is no sweep's.
func sweepOfRun(ctx context.Context, st store, id string) (*runSweep, error) {
	l, ok := st.(ledger.Ledger)
	if !ok {
		return nil, nil
	}
	states, err := l.Runs(ctx, []string{id})
	if err != nil || len(states) == 0 {
		return nil, err
	}
	e := states[0]
	scores := e.Scores
	if scores == nil {
		scores = []ledger.Score{}
	}
	return &runSweep{Sweep: e.Sweep, Agent: e.Agent, AgentHash: e.AgentHash, Task: e.TaskID, Epoch: e.Epoch, Attempt: e.Attempt, Scores: scores, Failed: e.Failed}, nil
}

// write prints the run's place in its sweep and its scores, each with its
// explanation.
func (r *runSweep) write(w io.Writer, cut func(string) string) {
	fmt.Fprintf(w, "sweep %s: agent %s (configuration %s), task %s, epoch %d, attempt %d\n", r.Sweep, r.Agent, r.AgentHash, r.Task, r.Epoch, r.Attempt)
	defer r.writeFailed(w)
	if len(r.Scores) == 0 {
		fmt.Fprintln(w, "scores: none (not scored yet, a stop reason the sweep retries, or a scorer that failed: polyloop score)")
		return
	}
	fmt.Fprintln(w, "scores:")
	for _, sc := range r.Scores {
		fmt.Fprintf(w, "  %s %g", sc.Scorer, sc.Value)
		if sc.GraderRunID != "" {
			fmt.Fprintf(w, " (graded by run %s)", sc.GraderRunID)
		}
		fmt.Fprintln(w)
		if sc.Explanation != "" {
			for _, l := range strings.Split(cut(sc.Explanation), "\n") {
				fmt.Fprintf(w, "    %s\n", l)
			}
		}
	}
}

// writeFailed prints the scorers that could not score the run, each with
// its error whole (bounded by sweep.MaxScoreError): its end says what
// failed.
func (r *runSweep) writeFailed(w io.Writer) {
	if len(r.Failed) == 0 {
		return
	}
	fmt.Fprintln(w, "scorers that failed (polyloop score scores the run again):")
	for _, f := range r.Failed {
		fmt.Fprintf(w, "  %s failed at %s:\n", f.Scorer, f.ScoredAt.Format("2006-01-02 15:04:05"))
		for _, l := range strings.Split(f.Error, "\n") {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
}
