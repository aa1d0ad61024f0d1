package polyloop

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// driver performs what the step machine asks for one invocation (Run or
// Resume) of one run: it makes the ready's records durable in one Append,
// emits their events, then performs the effect — a model call, a parse, the
// actions — and feeds the facts back. It is the only part of the loop that
// touches the seams, the context and the clock.
type driver struct {
	r     *Runner
	runID string
	opts  ResumeOptions // carried over to the children this invocation resumes
	sinks *sinkSet

	// mu guards the machine and the appends while actions run in parallel
	// or children are received from the action's goroutines.
	mu sync.Mutex
	m  *machine
	// audit holds the executors' own outcomes of settlements not yet
	// emitted, by result id.
	audit map[string]*ActionOutcome
	// broken is the persistence error after which the run writes nothing
	// more (SPEC §7.4), even if an executor swallowed it.
	broken error
	// appends counts the Appends attempted.
	appends int
	// encode: the store keeps rows' bytes (not a RecordKeeper); rows and
	// buf are the scratch of the rows of each write.
	encode bool
	// share: the store keeps snapshots once (SnapshotKeeper).
	share bool
	rows  []Row
	buf   []byte

	// envSpec is the agent's environment (nil: none); env the
	// environment this invocation made, destroyed when it ends (runenv.go).
	envSpec *EnvSpec
	env     Environment

	driverMemory // the agent's view and maintainer (driver_memory.go)
}

func newDriver(r *Runner, runID string, m *machine, opts ResumeOptions) *driver {
	_, keeper := r.Store.(RecordKeeper)
	_, shares := r.Store.(SnapshotKeeper)
	return &driver{r: r, runID: runID, m: m, opts: opts, sinks: newSinkSet(r.Sinks, r.SinkPolicy), encode: !keeper, share: shares && !keeper}
}

// now is the Runner's clock: the one the log's timestamps and the gates'
// deadlines are read from.
func (d *driver) now() time.Time { return d.r.now() }

// run drives the machine until the run finishes or an error stops it.
func (d *driver) run(ctx context.Context) (RunResult, error) {
	defer d.closeEnv(ctx)
	rd := d.next()
	for {
		var err error
		switch e := rd.effect; e.kind {
		case effectFinish:
			return d.finish(ctx, rd)
		case effectSuspend:
			return d.suspend(ctx, rd)
		case effectParse:
			// No side effect: the records pending wait for the next write.
			d.tickFact()
			if err = d.m.decided(d.r.Parser.Parse(*e.reply)); err == nil {
				rd = d.next()
			} else {
				err = fmt.Errorf("parser %T: %w", d.r.Parser, err)
			}
		case effectCallModel:
			if stopRequested(ctx) {
				return RunResult{}, d.stopOnRequest(ctx, rd)
			}
			if err = d.begin(ctx, rd); err == nil {
				if err = d.callModel(ctx, e.req); err == nil {
					rd = d.next()
				}
			}
		case effectExecute:
			if err = d.begin(ctx, rd); err == nil {
				rd, err = d.execute(ctx, e.intents)
			}
		case effectReconcile:
			if err = d.reconcile(ctx, e.intents); err == nil {
				rd = d.next()
			}
		case effectView:
			if err = d.fetchView(ctx); err == nil {
				rd = d.next()
			}
		case effectEnv:
			if err = d.prepareEnv(ctx, e); err == nil {
				rd = d.next()
			}
		case effectMaintain:
			if err = d.begin(ctx, rd); err == nil {
				if err = d.maintain(ctx, e.maint); err == nil {
					rd = d.next()
				}
			}
		default:
			panic("polyloop: internal error: the machine waits with no action in flight")
		}
		if err != nil {
			return RunResult{}, err
		}
	}
}

// next asks the machine for its next ready, telling it the time first when
// a gate's deadline is computed from it or compared with it (timed).
func (d *driver) next() ready {
	if d.m.st.timed() {
		d.m.now = d.now()
	}
	return d.m.next()
}

// tickFact tells the machine the time before a fact is fed, under a time
// limit (Limits.clocked): the fact's record then holds the time it came,
// and the fold counts the call's or action's time from it.
func (d *driver) tickFact() {
	if d.m.st.clocked {
		d.m.now = d.now()
	}
}

// suspend writes what the machine queued before it suspended (gate
// requests, timeout answers, settled outcomes) and returns the run
// suspended: it waits for the gates the result lists.
func (d *driver) suspend(ctx context.Context, rd ready) (RunResult, error) {
	if err := d.settle(ctx, rd.records); err != nil {
		return RunResult{}, err
	}
	return RunResult{RunID: d.runID, Suspended: rd.effect.suspended, Totals: d.m.st.totals.totals(),
		Sinks: d.sinks.snapshot(), Records: d.m.st.next}, nil
}

// begin makes a ready's records durable before its effect starts, unless the
// context is done: then only its facts are written and the effect does not
// start.
func (d *driver) begin(ctx context.Context, rd ready) error {
	if cause := ctx.Err(); cause != nil {
		if err := d.settle(ctx, rd.facts()); err != nil {
			return err
		}
		return cause
	}
	return d.write(ctx, rd.records)
}

// write makes records durable in one Append, then emits their events: it
// stamps them, makes their rows (rowsOf: encoded once, checked against the
// log's limits, with their checksums) and hands the rows to the store. A
// record refused there is refused before the Append: nothing of it is
// written. After a refused record or a failed Append nothing more is
// written for the run.
func (d *driver) write(ctx context.Context, recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	if d.broken != nil {
		return d.broken
	}
	stamp(recs, d.now())
	rows, buf, err := rowsOf(d.runID, recs, rowOpts{encode: d.encode, checked: true, share: d.share}, d.rows, d.buf)
	d.rows, d.buf = rows, buf // the store retains neither (Store contract)
	if err != nil {
		d.broken = err
		return err
	}
	d.appends++
	if err := d.r.Store.Append(ctx, d.runID, rows); err != nil {
		d.broken = persistenceError("append", d.runID, err)
		if cerr := ctx.Err(); cerr != nil {
			// Cancelled while the append was under way: its outcome is
			// unknown (§7.4), and the cancellation is not swallowed.
			return errors.Join(cerr, d.broken)
		}
		return d.broken
	}
	d.emit(ctx, recs)
	return nil
}

// nothingWritten reports whether the invocation is known to have written
// nothing: no Append was attempted (a record refused for the log's limits,
// ErrJSONLimit, is refused before its Append).
func (d *driver) nothingWritten() bool { return d.appends == 0 }

func (d *driver) emit(ctx context.Context, recs []Record) {
	if len(d.r.Sinks) == 0 || !d.sinks.active() {
		d.audit = nil
		return
	}
	agent := d.m.st.snap.Agent
	for _, r := range recs {
		var audit *ActionOutcome
		switch b := r.Body.(type) {
		case *ActionResult:
			audit = d.audit[b.ResultID]
		case *StepCompleted:
			audit = d.audit[b.ResultID]
		}
		if r.Seq > 0 && r.Seq <= d.m.st.copiedUntil {
			if sc, ok := r.Body.(*StepCompleted); ok {
				d.sinks.emit(ctx, copiedStepEvent(d.runID, agent, r, sc))
			}
			continue
		}
		for _, ev := range recordEvents(d.runID, agent, r, audit) {
			d.sinks.emit(ctx, ev)
		}
	}
	d.audit = nil
}

// stream calls a streaming client, turning its deltas into events. When the
// call ends in an error after an attempt previewed something, that attempt
// is announced superseded.
func (d *driver) stream(ctx context.Context, sm StreamingModelClient, req ModelRequest) (ModelReply, error) {
	base := Event{V: EventVersion, RunID: d.runID, Agent: d.m.st.snap.Agent, Step: req.Step,
		Seq: d.m.st.next - 1, CallID: req.CallID, Attempt: d.m.st.attempt}
	previewing := 0 // the client attempt whose deltas are shown
	emit := func(kind EventKind, dl Delta) {
		ev := base
		ev.Kind, ev.At, ev.Delta = kind, d.now(), &dl
		d.sinks.emit(ctx, ev)
	}
	reply, err := sm.Stream(ctx, req, func(dl Delta) {
		if dl.Superseded {
			emit(EventCandidateSuperseded, dl)
			previewing = 0
			return
		}
		previewing = dl.Attempt
		emit(EventModelDelta, dl)
	})
	if err != nil && previewing > 0 {
		emit(EventCandidateSuperseded, Delta{Attempt: previewing, Superseded: true})
	}
	return reply, err
}

// FactWriteTimeout bounds the write of records that are already facts (a
// model result, an action's outcome, a determined finish) when the run's
// context has been cancelled: they are written on a context detached from
// the cancellation, so that a cancelled run loses nothing that happened. It
// bounds only what honours the context: a store that has begun a commit
// finishes it, and each event delivered afterwards may take up to the
// sinks' own timeout.
const FactWriteTimeout = 10 * time.Second

// settle writes facts: on ctx, or, when ctx is done, on a context detached
// from the cancellation and bounded by FactWriteTimeout, joining a write
// failure to the cancellation. It is the one place where a cancelled run
// records what already happened.
func (d *driver) settle(ctx context.Context, recs []Record) error {
	cause := ctx.Err()
	if cause == nil {
		return d.write(ctx, recs)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), FactWriteTimeout)
	defer cancel()
	if err := d.write(wctx, recs); err != nil {
		return errors.Join(cause, err)
	}
	return nil
}

func (d *driver) finish(ctx context.Context, rd ready) (RunResult, error) {
	recs, res := d.m.finish(rd.effect, d.sinks.counts())
	if err := d.settle(ctx, append(rd.records, recs...)); err != nil {
		return RunResult{}, err
	}
	res.Sinks = d.sinks.snapshot()
	return res, nil
}

func (d *driver) callModel(ctx context.Context, req ModelRequest) error {
	var reply ModelReply
	var err error
	if sm, ok := d.r.Model.(StreamingModelClient); ok && d.sinks.wantDeltas() {
		reply, err = d.stream(ctx, sm, req)
	} else {
		reply, err = d.r.Model.Complete(ctx, req)
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			// Cancellation is not a model failure: nothing is recorded.
			if errors.Is(err, cerr) {
				return err
			}
			return fmt.Errorf("%w (model client returned: %w)", cerr, err)
		}
		d.tickFact()
		d.m.modelFailed(err)
		return nil
	}
	d.tickFact()
	d.m.modelReplied(reply)
	return nil
}
