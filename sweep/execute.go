package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/sweep/ledger"
)

// ErrUnknownRun marks a run id that Execute cannot take: no entry in the
// ledger, an entry of another sweep, or one of an agent the sweep does not
// have (a changed agent file: its hash differs).
var ErrUnknownRun = errors.New("sweep: not a run of this sweep")

// Outcome is what Execute did with one run of a sweep.
type Outcome struct {
	Entry ledger.Entry
	// Result is the run's result when it finished (in this call or
	// before) or waits at a gate (Result.Suspended); nil otherwise.
	Result *polyloop.RunResult
	// Started and Resumed say whether this call ran the run's steps: from
	// its start, or from its log.
	Started, Resumed bool
	// Scores are the scores this call wrote; ScoreErrors say which
	// scorers could not score (the run stays unscored by them), each a
	// *ScoreError.
	Scores      []ledger.Score
	ScoreErrors []error
	// Next is the attempt that follows, already recorded in the ledger:
	// the caller executes it after Delay. Nil when the run's stop reason is
	// not retried or no attempt is left.
	Next  *ledger.Entry
	Delay time.Duration
}

// Finished reports whether the run finished.
func (o *Outcome) Finished() bool { return o.Result != nil && o.Result.Suspended == nil }

// Execute runs or resumes run runID of the sweep, as its log says: it
// starts the run when it has no record, resumes it when unfinished, and
// takes the stored result when it finished; then it scores the finished
// run with the scorers whose scores are missing or stale, and records the
// next attempt when the run's stop reason is retried. It is the one call a
// worker makes for a job "run or resume run X of sweep S"; any number may
// run at once (two for the same run meet its lease: ErrLeaseHeld).
//
// The run must have an entry in the store's ledger: Run records the
// entries of the runs it starts, and Outcome.Next is recorded before it is
// returned. Errors: ErrUnknownRun; and Run's and Resume's errors,
// unchanged (polyloop.ErrLeaseHeld, ErrStopRequested when ctx carries a
// stop request, a *PersistenceError, a cancellation, a seam's error). A
// failure of the ledger (its every error but ledger.ErrNotFound and
// ledger.ErrConflict, as its contract says) is a *PersistenceError too, so
// a caller retries it as it retries a failed Append.
func (s *Sweep) Execute(ctx context.Context, store Store, runID string) (Outcome, error) {
	states, err := store.Runs(ctx, []string{runID})
	if err != nil {
		return Outcome{}, ledgerFailure("read", runID, err)
	}
	if len(states) == 0 {
		return Outcome{}, fmt.Errorf("%w: %s has no entry in the ledger", ErrUnknownRun, runID)
	}
	st := states[0]
	if st.Sweep != s.def.Name {
		return Outcome{Entry: st.Entry}, fmt.Errorf("%w: %s belongs to the sweep %s", ErrUnknownRun, runID, st.Sweep)
	}
	step := stepStart
	switch {
	case st.Run == nil:
	case !st.Run.Finished:
		step = stepResume
	default:
		step = stepScore
	}
	return s.execute(ctx, store, st, step)
}

// execute does step (start, resume or score) for the run of st.
func (s *Sweep) execute(ctx context.Context, store Store, st ledger.State, step step) (Outcome, error) {
	out := Outcome{Entry: st.Entry}
	agent, ok := s.agents[st.AgentHash]
	if !ok {
		return out, fmt.Errorf("%w: %s is a run of agent %s with snapshot %s, which the sweep does not have (the agent changed?)",
			ErrUnknownRun, st.RunID, st.Agent, st.AgentHash)
	}
	var task Task
	if err := json.Unmarshal(st.Task, &task); err != nil {
		return out, fmt.Errorf("sweep: the task of %s in the ledger: %w", st.RunID, err)
	}
	r := agent.runner(store)
	var res polyloop.RunResult
	var err error
	release := func() {}
	if agent.Agent.Environment != nil && step != stepScore {
		// The run's environment exists while its invocation runs (it is
		// destroyed when Run or Resume returns); the slot is given back
		// then, before a command scorer takes one of its own.
		if release, err = acquireEnv(ctx, s.envSlots); err != nil {
			return out, err
		}
	}
	switch step {
	case stepStart:
		s.emit(s.runEvent(EventRunStarted, st.Entry))
		out.Started = true
		res, err = r.Run(ctx, st.RunID, agent.Agent, task.RunTask())
		if errors.Is(err, polyloop.ErrRunExists) { // another process started it since the ledger was read
			out.Started, out.Resumed = false, true
			res, err = r.Resume(ctx, st.RunID, agent.Agent)
		}
	case stepResume:
		s.emit(s.runEvent(EventRunResumed, st.Entry))
		out.Resumed = true
		res, err = r.Resume(ctx, st.RunID, agent.Agent)
	default: // a finished run: its stored result
		res, err = r.Resume(ctx, st.RunID, agent.Agent)
	}
	release()
	if err != nil {
		return out, err
	}
	out.Result = &res
	if res.Suspended != nil {
		return out, nil
	}
	if s.def.Retry.Retried(res.StopReason) {
		if st.Attempt < s.def.Retry.Attempts {
			next := s.next(st.Entry)
			if err := store.AddEntries(ctx, []ledger.Entry{next}); err != nil {
				return out, ledgerFailure("append", st.RunID, err)
			}
			out.Next, out.Delay = &next, s.def.Retry.delay(next.Attempt)
		}
		return out, nil
	}
	in := ScoreInput{RunID: st.RunID, Task: task, StopReason: res.StopReason, store: store, slots: s.slots}
	if spec := agent.Agent.Environment; spec != nil && agent.Environments != nil {
		log, err := polyloop.ReadLog(ctx, store, st.RunID)
		if err != nil {
			return out, err
		}
		in.env = &runEnv{provider: agent.Environments, spec: *spec, ref: polyloop.LastEnvSnapshot(log),
			keep: s.def.KeepEnvironments, slots: s.envSlots}
	}
	if res.StopReason == polyloop.StopCompleted {
		in.Answer = res.FinalAnswer
	}
	return s.score(ctx, store, out, in, st.Scores)
}

// score scores a finished run with the scorers whose scores are missing
// or stale, and writes the scores. Scoring does not see the caller's stop
// request (a worker's slice, a graceful stop): the run it scores has
// finished, and a model-graded scorer's grading run refused at its first
// step boundary would leave the run unscored. Cancelling ctx still stops
// it.
func (s *Sweep) score(ctx context.Context, store Store, out Outcome, in ScoreInput, have []ledger.Score) (Outcome, error) {
	ctx = polyloop.WithStopRequest(ctx, nil)
	var failed []ledger.Score
	for _, sc := range s.def.Scorers {
		if scored(sc, have, in.Task) {
			continue
		}
		r, err := sc.Score(ctx, in)
		if err != nil {
			out.ScoreErrors = append(out.ScoreErrors, &ScoreError{RunID: in.RunID, Scorer: sc.Name(), Err: err})
			if ctx.Err() == nil { // a cancelled sweep is no scorer's failure
				failed = append(failed, failureRecord(sc, in, err, time.Now()))
			}
			continue
		}
		out.Scores = append(out.Scores, scoreRecord(sc, in, r, time.Now()))
	}
	if err := store.PutScores(ctx, append(slices.Clip(out.Scores), failed...)); err != nil {
		out.Scores = nil
		return out, ledgerFailure("append", in.RunID, err)
	}
	return out, nil
}

// runEvent is an event about the run of an entry.
func (s *Sweep) runEvent(kind EventKind, e ledger.Entry) Event {
	return Event{Kind: kind, RunID: e.RunID, Agent: e.Agent, Task: e.TaskID, Epoch: e.Epoch, Attempt: e.Attempt}
}

// ledgerFailure makes a store failure of the ledger a
// *polyloop.PersistenceError (op "read" or "append", the run it was for);
// the ledger's sentinels and an error that already is one pass unchanged.
func ledgerFailure(op, runID string, err error) error {
	var pe *polyloop.PersistenceError
	if errors.Is(err, ledger.ErrNotFound) || errors.Is(err, ledger.ErrConflict) || errors.As(err, &pe) {
		return err
	}
	return &polyloop.PersistenceError{Op: op, RunID: runID, Err: err}
}
