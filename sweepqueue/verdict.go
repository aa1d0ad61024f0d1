package sweepqueue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/sweep"
)

// Action is what becomes of a job after one execution.
type Action int

const (
	// Complete: the run finished; the job completes with its Output.
	Complete Action = iota
	// CompleteNext: the run finished with a stop reason the sweep retries;
	// the next attempt's job is inserted and this one completed in one
	// transaction.
	CompleteNext
	// Snooze: the job goes back to the queue after Delay without using an
	// attempt (the slice ended, the run's lease is held elsewhere, the
	// worker stops).
	Snooze
	// Retry: the job fails this attempt; River retries it with backoff
	// until MaxAttempts.
	Retry
	// Cancel: the job is cancelled for a person, with Reason; it is not
	// retried.
	Cancel
)

func (a Action) String() string {
	return [...]string{"complete", "complete+next", "snooze", "retry", "cancel"}[a]
}

// Verdict is the fate of a job after one execution of its run.
type Verdict struct {
	Action Action
	Delay  time.Duration // Snooze
	// Reason says why, for a person: the job's recorded error for Retry and
	// Cancel, the progress line for the others.
	Reason string
	Err    error // Retry and Cancel
}

// Policy is what Judge needs besides the outcome.
type Policy struct {
	// Attempt is the job's attempt (1 for the first execution).
	Attempt int
	// FailAttempts is the attempt at which a seam's error, a panic or a
	// scorer's failure cancels the job instead of retrying it.
	FailAttempts int
	// HeldDelay is the snooze of a job whose run is leased elsewhere.
	HeldDelay time.Duration
}

// PanicError is a panic of a run's execution, recovered by the worker.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Judge maps the outcome of sweep.Sweep.Execute (out, err) onto the job:
//   - finished, any stop reason but resume_state_unknown → Complete (or
//     CompleteNext when out.Next is set), unless a scorer could not score
//     it (out.ScoreErrors): then Retry, which scores what is missing, and
//     Cancel from attempt FailAttempts on, the scorers' errors as the
//     job's error — a job never completes with its run left unscored;
//   - finished resume_state_unknown → Cancel: a person must look at the
//     action whose outcome is unknown;
//   - waiting at a gate → Cancel: a person answers (polyloop approve,
//     deliver), then enqueuing the sweep again continues it;
//   - a stop request (the slice's end or a graceful stop), also before the
//     first record → Snooze(0);
//   - polyloop.ErrLeaseHeld, polyloop.ErrLeaseLost → Snooze(HeldDelay):
//     never Complete, the holder may die before it finishes;
//   - a *polyloop.PersistenceError → Retry;
//   - a run the sweep cannot take (sweep.ErrUnknownRun), a sweep the
//     worker cannot rebuild (*ResolveError), an agent the runner refuses
//     (polyloop.ErrInvalidConfig), a changed snapshot
//     (polyloop.ErrSnapshotMismatch) → Cancel at once: retrying changes
//     nothing;
//   - a cancelled context (the job's timeout, a worker cancelled at once)
//     → Retry, also while the sweep was being rebuilt;
//   - any other error (a seam's, a *PanicError) → Retry, and Cancel from
//     attempt FailAttempts on.
func Judge(out sweep.Outcome, err error, p Policy) Verdict {
	var pe *polyloop.PersistenceError
	var re *ResolveError
	switch {
	case err == nil:
		return judgeResult(out, p)
	case errors.Is(err, polyloop.ErrStopRequested):
		return Verdict{Action: Snooze, Reason: "stopped at a step boundary"}
	case errors.Is(err, polyloop.ErrLeaseHeld), errors.Is(err, polyloop.ErrLeaseLost):
		return Verdict{Action: Snooze, Delay: p.HeldDelay, Reason: err.Error()}
	case errors.As(err, &pe):
		return Verdict{Action: Retry, Err: err, Reason: err.Error()}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return Verdict{Action: Retry, Err: err, Reason: "cancelled: " + err.Error()}
	case errors.Is(err, sweep.ErrUnknownRun), errors.As(err, &re), errors.Is(err, polyloop.ErrInvalidConfig), errors.Is(err, polyloop.ErrSnapshotMismatch):
		return Verdict{Action: Cancel, Err: err, Reason: err.Error()}
	case p.Attempt >= p.FailAttempts:
		return Verdict{Action: Cancel, Err: err, Reason: fmt.Sprintf("attempt %d of %d failed: %v", p.Attempt, p.FailAttempts, err)}
	}
	return Verdict{Action: Retry, Err: err, Reason: err.Error()}
}

func judgeResult(out sweep.Outcome, p Policy) Verdict {
	res := out.Result
	switch {
	case res == nil:
		return Verdict{Action: Retry, Err: errors.New("sweepqueue: the run returned no result"), Reason: "no result"}
	case res.Suspended != nil:
		err := fmt.Errorf("the run waits at a gate: answer it (polyloop approve / deliver), then enqueue the sweep again")
		return Verdict{Action: Cancel, Err: err, Reason: err.Error()}
	case res.StopReason == polyloop.StopResumeStateUnknown:
		err := fmt.Errorf("the run finished resume_state_unknown: an action's outcome is unknown, a person must check it (polyloop show %s)", out.Entry.RunID)
		return Verdict{Action: Cancel, Err: err, Reason: err.Error()}
	case len(out.ScoreErrors) > 0:
		err := fmt.Errorf("the run finished %s, but %d of the sweep's scorers could not score it: %w",
			res.StopReason, len(out.ScoreErrors), errors.Join(out.ScoreErrors...))
		if p.Attempt >= p.FailAttempts {
			return Verdict{Action: Cancel, Err: err, Reason: fmt.Sprintf("attempt %d of %d failed: %v", p.Attempt, p.FailAttempts, err)}
		}
		return Verdict{Action: Retry, Err: err, Reason: err.Error()}
	case out.Next != nil:
		return Verdict{Action: CompleteNext, Reason: fmt.Sprintf("finished %s; attempt %d is next", res.StopReason, out.Next.Attempt)}
	}
	return Verdict{Action: Complete, Reason: "finished " + string(res.StopReason)}
}
