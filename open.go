package polyloop

import (
	"context"
	"errors"
	"fmt"
)

// Every entry point — Run (and a child's start), Resume, Fork, Approve and
// Deliver — opens a run one way, as etcd raft's StartNode and RestartNode
// share NewRawNode and differ only in their bootstrap: open takes the run's
// lease and reads and folds its log under it; driver makes a machine that
// continues from the fold, with the records that bootstrap it (a new run's
// run_started, a fork's copies) and then the lease take-over queued for its
// first write, and the driver that writes every record through one path
// (driver.write: the store, then the sinks).

// opened is a run an invocation holds: its lease, and its log as read and
// folded under the lease.
type opened struct {
	r     *Runner
	runID string
	held  *heldLease
	log   RunLog
	st    *logState
}

// open acquires runID's lease — forced from a live holder with takeOver —
// and reads and folds the run's log under it. It returns the context that
// the lease's loss cancels; close releases the lease.
func (r *Runner) open(ctx context.Context, runID string, takeOver bool) (*opened, context.Context, error) {
	held, lctx, err := r.acquireLease(ctx, runID, takeOver)
	if err != nil {
		return nil, ctx, err
	}
	o := &opened{r: r, runID: runID, held: held}
	if o.log, o.st, err = r.readFold(lctx, runID); err != nil {
		held.release(lctx)
		return nil, ctx, err
	}
	return o, lctx, nil
}

// readFold reads a run's log and folds it: a store failure is a
// *PersistenceError, a log that breaks the grammar a *CorruptLogError.
func (r *Runner) readFold(ctx context.Context, runID string) (RunLog, *logState, error) {
	log, err := ReadLog(ctx, r.Store, runID)
	if err != nil {
		return log, nil, persistenceError("read", runID, err)
	}
	log.RunID = runID
	st, err := foldLog(log)
	return log, st, err
}

func (o *opened) close(ctx context.Context) { o.held.release(ctx) }

// fresh refuses a run that already has records: a new run or a fork starts
// only under an unused id.
func (o *opened) fresh() error {
	if !o.log.Empty() {
		return fmt.Errorf("%w: %q has %d records", ErrRunExists, o.runID, len(o.log.Records))
	}
	return nil
}

// driver is the driver of the opened run, for agent: its machine continues
// from the fold, with boot queued first and then the lease take-over, for
// the first write.
func (o *opened) driver(agent Agent, opts ResumeOptions, boot ...Record) *driver {
	m := newMachine(o.st)
	m.needsApproval = agent.approvalNeeds()
	if o.st.clocked || bootClocked(boot) {
		m.now = o.r.now() // the time of the invocation's first write
	}
	m.reconciles = reconcilerScope(o.r.Executor)
	for _, r := range boot {
		m.addRecord(r)
	}
	o.held.record(m)
	d := newDriver(o.r, o.runID, m, opts)
	d.memory = agent.Memory
	d.envSpec = agent.Environment
	return d
}

// start runs a run that has no record yet (a new run, a fork) from boot to
// its end. An error before its first record was written joins
// ErrRunNotStarted.
func (o *opened) start(ctx context.Context, agent Agent, boot ...Record) (RunResult, error) {
	d := o.driver(agent, ResumeOptions{}, boot...)
	res, err := o.held.result(d.run(ctx))
	if err != nil {
		if d.nothingWritten() {
			err = errors.Join(err, ErrRunNotStarted)
		}
		return RunResult{RunID: o.runID}, err
	}
	return res, nil
}

// started is the run_started record of a new run of agent on task: start's
// fields (where the run comes from) with the run's id, snapshot and
// versions filled in.
func (r *Runner) started(runID string, agent Agent, task Task, start *RunStarted) (Record, error) {
	snap := r.snapshot(agent, task)
	hash, err := snap.Hash()
	if err != nil {
		return Record{}, fmt.Errorf("%w: snapshot: %v", ErrInvalidConfig, err)
	}
	start.RunID, start.Snapshot, start.SnapshotHash = runID, snap, hash
	start.LibraryVersion, start.LogVersion = LibraryVersion, logVersionString
	return Record{Body: start}, nil
}

// prepare resolves and checks the agent an entry point runs.
func (r *Runner) prepare(ctx context.Context, agent Agent) (Agent, error) {
	agent, err := r.resolveAgent(agent) // tools.go
	if err != nil {
		return agent, err
	}
	if err := r.validate(agent); err != nil {
		return agent, err
	}
	return r.describeEnv(ctx, agent) // runenv.go
}
