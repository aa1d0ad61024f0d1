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
// carries only the RunID, so that the caller can resume the run — unless
// errors.Is(err, ErrRunNotStarted): the run's first record was never written
// (the context was done before the first Append, or the store refused it
// for the log's limits, ErrJSONLimit, before writing anything), nothing
// exists under the id, and Run with the same id starts it. An agent with a cost budget whose
// model client cannot know costs is refused (ErrUncheckableBudget). Errors: a
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
//
// Leases: when the Store is a Leaser, Run and Resume (and Fork, Approve and
// Deliver: every entry point opens a run the same way) hold the run's lease
// while they run; a run held by another live holder gives ErrLeaseHeld,
// a dead holder's lease is taken over and the take-over recorded, and a
// lease lost meanwhile stops the invocation with ErrLeaseLost. A stop
// request (WithStopRequest) ends it at the next step boundary with
// ErrStopRequested.
func (r *Runner) Run(ctx context.Context, runID string, agent Agent, task Task) (RunResult, error) {
	return r.RunWith(ctx, runID, agent, task, RunOptions{})
}

// RunOptions are the options of RunWith.
type RunOptions struct {
	// ReplayOf links the new run to the run whose recorded replies it
	// replays (RunStarted.ReplayOf); see replaymodel.Replay.
	ReplayOf *RunSource
}

// RunWith is Run with options.
func (r *Runner) RunWith(ctx context.Context, runID string, agent Agent, task Task, opts RunOptions) (RunResult, error) {
	return r.run(ctx, runID, agent, task, &RunStarted{ReplayOf: opts.ReplayOf})
}

// run starts a run; start holds the fields of its RunStarted that name
// where it comes from (a parent, a replayed run).
func (r *Runner) run(ctx context.Context, runID string, agent Agent, task Task, start *RunStarted) (RunResult, error) {
	agent, err := r.prepare(ctx, agent)
	if err != nil {
		return RunResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return RunResult{RunID: runID}, errors.Join(err, ErrRunNotStarted)
	}
	if runID == "" {
		runID = NewRunID()
	}
	o, ctx, err := r.open(ctx, runID, false)
	if err != nil {
		return RunResult{RunID: runID}, err
	}
	defer o.close(ctx)
	if err := o.fresh(); err != nil {
		return RunResult{RunID: runID}, err
	}
	rs, err := r.started(runID, agent, task, start)
	if err != nil {
		return RunResult{RunID: runID}, err
	}
	return o.start(ctx, agent, rs)
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
	agent, err := r.prepare(ctx, agent)
	if err != nil {
		return RunResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return RunResult{RunID: runID}, err
	}
	if opts.TakeOver {
		// Forcing a live holder away cancels what it does: first make sure
		// this resume would go on at all.
		if err := r.checkBeforeTakeOver(ctx, runID, agent, opts); err != nil {
			return RunResult{RunID: runID}, err
		}
	}
	o, ctx, err := r.open(ctx, runID, opts.TakeOver)
	if err != nil {
		return RunResult{RunID: runID}, err
	}
	defer o.close(ctx)
	return o.resume(ctx, agent, opts)
}

// resume continues the opened run as its plan says: a finished run's stored
// result, or a driver from the fold, with the configuration override, if
// any, queued after the take-over.
func (o *opened) resume(ctx context.Context, agent Agent, opts ResumeOptions) (RunResult, error) {
	st, runID := o.st, o.runID
	if o.log.Empty() {
		return RunResult{}, fmt.Errorf("%w: %q", ErrRunNotFound, runID)
	}
	plan := st.plan()
	if plan.Action == PlanAlreadyFinished {
		return RunResult{RunID: runID, StopReason: st.fin.StopReason, FinalAnswer: st.fin.FinalAnswer,
			Totals: st.fin.Totals, Sinks: st.fin.Sinks, Plan: &plan, Records: st.next}, nil
	}
	if err := o.r.checkOpenChildren(ctx, runID, plan, opts.TakeOver); err != nil {
		return RunResult{RunID: runID}, err
	}
	stored, storedHash := st.snap, st.hash
	override, err := o.r.checkConfig(st, agent, opts)
	if err != nil {
		return RunResult{RunID: runID}, err
	}
	if err := reloadMemory(ctx, runID, agent.Memory); err != nil {
		return RunResult{RunID: runID}, err
	}
	d := o.driver(agent, opts)
	if len(o.r.Sinks) > 0 {
		// The configuration the log holds; an override is its own event,
		// once its record is durable.
		d.sinks.emit(ctx, Event{V: EventVersion, Kind: EventRunResumed, RunID: runID, Agent: stored.Agent,
			Seq: plan.LastSeq, At: d.now(), Plan: &plan, Snapshot: &stored, SnapshotHash: storedHash})
	}
	if override != nil {
		d.m.add(override) // written with the resume's first write
	}
	res, err := o.held.result(d.run(ctx))
	if err != nil {
		return RunResult{RunID: runID}, err
	}
	res.Plan = &plan
	return res, nil
}

// checkBeforeTakeOver refuses, before any lease is forced, a resume that
// would be refused after it: an unknown run, a corrupt log, a changed
// configuration without AllowConfigChange. The log is read again under the
// lease, which decides.
func (r *Runner) checkBeforeTakeOver(ctx context.Context, runID string, agent Agent, opts ResumeOptions) error {
	log, st, err := r.readFold(ctx, runID)
	if err != nil {
		return err
	}
	if log.Empty() {
		return fmt.Errorf("%w: %q", ErrRunNotFound, runID)
	}
	if st.plan().Action == PlanAlreadyFinished {
		return nil
	}
	_, err = r.checkConfig(st, agent, opts)
	return err
}

// checkConfig compares the configuration's snapshot with the one in force.
// A difference is refused unless overridden; the override is the
// ConfigOverride record to write.
func (r *Runner) checkConfig(st *logState, agent Agent, opts ResumeOptions) (*ConfigOverride, error) {
	cur := r.snapshot(agent, st.snap.Task)
	hash, err := cur.Hash()
	if err != nil {
		return nil, fmt.Errorf("%w: snapshot: %v", ErrInvalidConfig, err)
	}
	if hash == st.hash {
		return nil, nil
	}
	fields := DiffSnapshots(st.snap, cur)
	if !opts.AllowConfigChange {
		return nil, &SnapshotMismatchError{RunID: st.runID, StoredHash: st.hash, CurrentHash: hash, Fields: fields}
	}
	return &ConfigOverride{PreviousHash: st.hash, SnapshotHash: hash, Fields: fields, Snapshot: cur}, nil
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
		if err := t.validateGate(agent.ApprovalPolicy); err != nil {
			errs = append(errs, fmt.Errorf("tools[%d] %q: %v", i, t.Name, err))
		}
		if err := CheckJSONLimits(t.Parameters); err != nil { // outside data: an MCP server's, an agent file's
			errs = append(errs, fmt.Errorf("tools[%d] %q: parameter schema beyond the log's limits: %w", i, t.Name, err))
		}
	}
	if err := agent.Memory.validate(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, validateEnv(agent)...)
	l := agent.Limits
	if l.MaxSteps < 0 || l.MaxTokens < 0 || l.MaxCostUSD < 0 || l.ObservationLimit < 0 || l.TimeLimit < 0 || l.WorkingLimit < 0 {
		errs = append(errs, fmt.Errorf("limits must not be negative: %+v", l))
	}
	if l.MaxCostUSD > 0 {
		if cr, ok := r.Model.(CostReporter); !ok || !cr.KnowsCost(agent.Model) {
			errs = append(errs, fmt.Errorf("%w: max cost %g USD, but the model client %s knows no price for model %q (give the client prices, or drop the budget)",
				ErrUncheckableBudget, l.MaxCostUSD, Describe(r.Model).Name, agent.Model.Model))
		}
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
