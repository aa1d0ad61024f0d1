package sweepqueue

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/sweep/ledger"
)

func TestJudge(t *testing.T) {
	entry := ledger.Entry{RunID: "s.a.t.e1.a1"}
	finished := func(r polyloop.StopReason) sweep.Outcome {
		return sweep.Outcome{Entry: entry, Result: &polyloop.RunResult{StopReason: r}}
	}
	next := finished(polyloop.StopLLMError)
	next.Next = &ledger.Entry{RunID: "s.a.t.e1.a2", Attempt: 2}
	unscored := finished(polyloop.StopCompleted)
	unscored.ScoreErrors = []error{errors.New("scorer check: the command exited with status 7")}
	suspended := sweep.Outcome{Entry: entry, Result: &polyloop.RunResult{Suspended: &polyloop.Suspension{}}}
	seam := errors.New("executor: socket closed")
	held := &polyloop.LeaseHeldError{RunID: entry.RunID}
	pol := func(attempt int) Policy { return Policy{Attempt: attempt, FailAttempts: 3, HeldDelay: 7 * time.Second} }
	cases := []struct {
		name    string
		out     sweep.Outcome
		err     error
		attempt int
		want    Action
		delay   time.Duration
	}{
		{"completed", finished(polyloop.StopCompleted), nil, 1, Complete, 0},
		{"max_steps", finished(polyloop.StopMaxSteps), nil, 1, Complete, 0},
		{"env_error", finished(polyloop.StopEnvError), nil, 1, Complete, 0},
		{"llm_error, not retried", finished(polyloop.StopLLMError), nil, 1, Complete, 0},
		{"llm_error with a next attempt", next, nil, 1, CompleteNext, 0},
		{"a scorer failed, first attempt", unscored, nil, 1, Retry, 0},
		{"a scorer failed, last attempt", unscored, nil, 3, Cancel, 0},
		{"resume_state_unknown", finished(polyloop.StopResumeStateUnknown), nil, 1, Cancel, 0},
		{"waiting at a gate", suspended, nil, 1, Cancel, 0},
		{"slice ended", sweep.Outcome{}, fmt.Errorf("resume: %w", polyloop.ErrStopRequested), 1, Snooze, 0},
		{"stopped before the first record", sweep.Outcome{}, errors.Join(polyloop.ErrRunNotStarted, polyloop.ErrStopRequested), 2, Snooze, 0},
		{"lease held", sweep.Outcome{}, held, 5, Snooze, 7 * time.Second},
		{"lease lost", sweep.Outcome{}, fmt.Errorf("x: %w", polyloop.ErrLeaseLost), 5, Snooze, 7 * time.Second},
		{"persistence error", sweep.Outcome{}, &polyloop.PersistenceError{Op: "append", Err: seam}, 20, Retry, 0},
		{"seam error, first attempt", sweep.Outcome{}, seam, 1, Retry, 0},
		{"seam error, second attempt", sweep.Outcome{}, seam, 2, Retry, 0},
		{"seam error, last attempt", sweep.Outcome{}, seam, 3, Cancel, 0},
		{"panic, last attempt", sweep.Outcome{}, &PanicError{Value: "boom"}, 3, Cancel, 0},
		{"panic, first attempt", sweep.Outcome{}, &PanicError{Value: "boom"}, 1, Retry, 0},
		{"cancelled context", sweep.Outcome{}, context.Canceled, 9, Retry, 0},
		{"unknown run", sweep.Outcome{}, fmt.Errorf("%w: changed agent", sweep.ErrUnknownRun), 1, Cancel, 0},
		{"invalid config", sweep.Outcome{}, fmt.Errorf("%w: no model", polyloop.ErrInvalidConfig), 1, Cancel, 0},
		{"snapshot mismatch", sweep.Outcome{}, &polyloop.SnapshotMismatchError{}, 1, Cancel, 0},
		{"no result", sweep.Outcome{}, nil, 1, Retry, 0},
		{"sweep not rebuilt", sweep.Outcome{}, &ResolveError{Sweep: "s", Err: errors.New("the agent a changed")}, 1, Cancel, 0},
		{"sweep not rebuilt: store failure", sweep.Outcome{}, &ResolveError{Sweep: "s", Err: &polyloop.PersistenceError{Op: "read", Err: seam}}, 5, Retry, 0},
		{"sweep not rebuilt: cancelled", sweep.Outcome{}, &ResolveError{Sweep: "s", Err: context.Canceled}, 5, Retry, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Judge(c.out, c.err, pol(c.attempt))
			if v.Action != c.want || v.Delay != c.delay {
				t.Fatalf("Judge = %v (delay %s, %q), want %v (delay %s)", v.Action, v.Delay, v.Reason, c.want, c.delay)
			}
			if (v.Action == Retry || v.Action == Cancel) && v.Err == nil {
				t.Fatalf("%v without an error", v.Action)
			}
			if v.Reason == "" {
				t.Fatal("no reason")
			}
		})
	}
}
