package polyloop

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"
)

// Run starts a new run of agent on task and runs it until it finishes.
//
// runID names the run; an empty runID gets a new ULID. A runID that already
// has records gives ErrRunExists. When an error is returned, the result
// carries only the RunID, so that the caller can resume the run. Errors: a
// store failure is a *PersistenceError; an executor error or panic, a parser
// panic and a cancellation propagate unchanged, leaving a log that Resume
// can continue. A model failure is not an error: the run finishes with
// StopLLMError.
//
// Cancellation: the loop checks the context before each new side effect (a
// model call, an action) and then returns the context's error. What already
// happened is not lost: a model result or a step record still queued is
// written first, on a context detached from the cancellation and bounded by
// FactWriteTimeout, and no intent is written. When the finish was already
// determined (a final answer, the environment's Done, env_error, a limit),
// it is written the same way and Run returns the finished result. If such a
// write fails, the error joins the cancellation and the PersistenceError. A
// cancellation that lands while an Append is under way gives both as well:
// that append's outcome is unknown, as after any store failure.
func (r *Runner) Run(ctx context.Context, runID string, agent Agent, task Task) (RunResult, error) {
	return r.run(ctx, runID, agent, task, nil)
}

func (r *Runner) run(ctx context.Context, runID string, agent Agent, task Task, parent *ParentRef) (RunResult, error) {
	agent, err := r.resolveAgent(agent) // tools.go
	if err != nil {
		return RunResult{}, err
	}
	if err := r.validate(agent); err != nil {
		return RunResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return RunResult{RunID: runID}, err
	}
	if runID == "" {
		runID = NewRunID()
	}
	log, err := r.Store.ReadLog(ctx, runID)
	if err != nil {
		return RunResult{}, persistenceError("read", runID, err)
	}
	if !log.Empty() {
		return RunResult{}, fmt.Errorf("%w: %q has %d records", ErrRunExists, runID, len(log.Records))
	}
	snap := r.snapshot(agent, task)
	hash, err := snap.Hash()
	if err != nil {
		return RunResult{}, fmt.Errorf("%w: snapshot: %v", ErrInvalidConfig, err)
	}
	d := newDriver(r, runID, snap, hash)
	d.add(&RunStarted{RunID: runID, Snapshot: snap, SnapshotHash: hash, LibraryVersion: LibraryVersion, Parent: parent})
	return d.loop(ctx, entry{kind: entryStep, step: 1})
}

// Resume continues a run from its log, as PlanResume decides, and runs it
// until it finishes. A finished run returns its stored result and runs
// nothing. An unknown runID gives ErrRunNotFound; a corrupt log a
// *CorruptLogError; a configuration whose snapshot differs from the stored
// one a *SnapshotMismatchError naming the fields (see ResumeWith).
func (r *Runner) Resume(ctx context.Context, runID string, agent Agent) (RunResult, error) {
	return r.ResumeWith(ctx, runID, agent, ResumeOptions{})
}

// ResumeWith is Resume with options.
func (r *Runner) ResumeWith(ctx context.Context, runID string, agent Agent, opts ResumeOptions) (RunResult, error) {
	agent, err := r.resolveAgent(agent) // tools.go
	if err != nil {
		return RunResult{}, err
	}
	if err := r.validate(agent); err != nil {
		return RunResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return RunResult{RunID: runID}, err
	}
	log, err := r.Store.ReadLog(ctx, runID)
	if err != nil {
		return RunResult{}, persistenceError("read", runID, err)
	}
	log.RunID = runID
	plan, err := PlanResume(log)
	if err != nil {
		return RunResult{}, err
	}
	if plan.Action == PlanFinished {
		fin := log.Finished()
		return RunResult{RunID: runID, StopReason: fin.StopReason, FinalAnswer: fin.FinalAnswer,
			Totals: fin.Totals, Sinks: fin.Sinks, Plan: &plan, Records: log.NextSeq()}, nil
	}
	stored, storedHash := log.Snapshot()
	d := newDriver(r, runID, stored, storedHash)
	d.opts = opts
	for _, rec := range log.Records {
		d.totals.add(rec.Body)
		d.hist.add(rec.Body)
	}
	d.receptions = openReceptions(log)
	d.nextSeq = log.NextSeq()
	if err := d.checkConfig(agent, opts); err != nil {
		return RunResult{RunID: runID}, err
	}
	if len(r.Sinks) > 0 {
		// The configuration the log holds; an override is its own event,
		// once its record is durable.
		d.sinks.emit(ctx, Event{V: EventVersion, Kind: EventRunResumed, RunID: runID, Agent: stored.Agent,
			Seq: plan.LastSeq, At: d.now(), Plan: &plan, Snapshot: &stored, SnapshotHash: storedHash})
	}
	res, err := d.resume(ctx, plan)
	if err != nil {
		return RunResult{RunID: runID}, err
	}
	res.Plan = &plan
	return res, nil
}

// checkConfig compares the configuration's snapshot with the one in force.
// A difference is refused unless overridden; the override is queued as a
// ConfigOverride record, written with the resume's first write.
func (d *driver) checkConfig(agent Agent, opts ResumeOptions) error {
	cur := d.r.snapshot(agent, d.snap.Task)
	hash, err := cur.Hash()
	if err != nil {
		return fmt.Errorf("%w: snapshot: %v", ErrInvalidConfig, err)
	}
	if hash == d.hash {
		return nil
	}
	fields := DiffSnapshots(d.snap, cur)
	if !opts.AllowConfigChange {
		return &SnapshotMismatchError{RunID: d.runID, StoredHash: d.hash, CurrentHash: hash, Fields: fields}
	}
	d.add(&ConfigOverride{PreviousHash: d.hash, SnapshotHash: hash, Fields: fields, Snapshot: cur})
	d.setSnapshot(cur, hash)
	return nil
}

// resume turns a plan into the loop's entry point.
func (d *driver) resume(ctx context.Context, p ResumePlan) (RunResult, error) {
	switch p.Action {
	case PlanStartStep:
		return d.loop(ctx, entry{kind: entryStep, step: p.Step})
	case PlanRetryModelCall:
		return d.loop(ctx, entry{kind: entryModelCall, step: p.Step, attempt: p.Attempt})
	case PlanReparse:
		return d.loop(ctx, entry{kind: entryDecide, step: p.Step, callID: p.ModelCallID, reply: p.reply})
	case PlanReplayAction:
		if err := d.checkReplay(p); err != nil {
			return RunResult{}, err
		}
		return d.loop(ctx, entry{kind: entryAction, step: p.Step, callID: p.ModelCallID, action: p.intent.Action, attempt: p.Attempt})
	case PlanStopUnknown, PlanFinish:
		return d.loop(ctx, entry{kind: entryFinish, reason: p.StopReason, answer: p.FinalAnswer})
	}
	return RunResult{}, fmt.Errorf("polyloop: unknown plan action %q", p.Action)
}

// checkReplay parses the stored reply again, as the design requires before a
// replay, and refuses to go on if the parser no longer yields the recorded
// action: the parser broke its determinism contract.
func (d *driver) checkReplay(p ResumePlan) error {
	reply := p.reply
	if reply == nil {
		return &CorruptLogError{RunID: d.runID, Seq: -1, Reason: "no stored reply for " + p.ModelCallID}
	}
	act, ok := d.r.Parser.Parse(*reply).(Act)
	if !ok || !act.Action.Equal(p.intent.Action) {
		return fmt.Errorf("%w: reply of %s no longer parses to the action of %s", ErrNondeterministicParser, p.ModelCallID, p.ActionID)
	}
	return nil
}

func (r *Runner) validate(agent Agent) error {
	switch {
	case r.Model == nil:
		return fmt.Errorf("%w: Runner.Model is nil", ErrInvalidConfig)
	case r.Parser == nil:
		return fmt.Errorf("%w: Runner.Parser is nil", ErrInvalidConfig)
	case r.Executor == nil:
		return fmt.Errorf("%w: Runner.Executor is nil", ErrInvalidConfig)
	case r.Store == nil:
		return fmt.Errorf("%w: Runner.Store is nil", ErrInvalidConfig)
	}
	seen := map[string]bool{}
	var errs []error
	for i, t := range agent.Tools {
		if t.Name == "" {
			errs = append(errs, fmt.Errorf("tools[%d]: empty name", i))
		}
		if seen[t.Name] {
			errs = append(errs, fmt.Errorf("tools[%d]: duplicate name %q", i, t.Name))
		}
		seen[t.Name] = true
		if err := t.Replay.validate(); err != nil {
			errs = append(errs, fmt.Errorf("tools[%d]: %v", i, err))
		}
	}
	l := agent.Limits
	if l.MaxSteps < 0 || l.MaxTokens < 0 || l.MaxCostUSD < 0 || l.ObservationLimit < 0 {
		errs = append(errs, fmt.Errorf("limits must not be negative: %+v", l))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

// NewRunID returns a new ULID: 48 bits of milliseconds and 80 random bits in
// Crockford base32, sortable by creation time.
func NewRunID() string {
	const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	var b [16]byte
	ms := uint64(time.Now().UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	_, _ = rand.Read(b[6:])
	var out [26]byte
	// 128 bits → 26 base32 digits, most significant first.
	hi := uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 | uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])
	lo := uint64(b[8])<<56 | uint64(b[9])<<48 | uint64(b[10])<<40 | uint64(b[11])<<32 | uint64(b[12])<<24 | uint64(b[13])<<16 | uint64(b[14])<<8 | uint64(b[15])
	for i := 25; i >= 0; i-- {
		out[i] = alphabet[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}

// openReceptions returns the receptions recorded during the action left
// open at the end of the log: a replay of that action reuses them.
func openReceptions(log RunLog) map[string]*ChildReception {
	var out map[string]*ChildReception
	for _, r := range log.Records {
		switch b := r.Body.(type) {
		case *ModelCallIntent, *StepCompleted:
			out = nil
		case *ChildReception:
			if out == nil {
				out = map[string]*ChildReception{}
			}
			out[b.ChildRunID] = b
		}
	}
	return out
}
