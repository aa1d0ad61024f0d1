package polyloop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Leaser is the optional lease interface of a Store: one live process per
// run. When the Runner's Store implements it, Run and Resume (and so every
// child run InvokeChild starts or resumes) acquire the run's lease before
// their first effect — before they read the log they plan from — and
// release it when they return. A Store without it gets no leases: the
// sequence rule alone then fences two processes, after the effect of the
// second.
//
// Contract:
//   - AcquireLease grants the lease on runID to req.Owner, or fails. At most
//     one lease on a run is held at any time, across every instance of the
//     store on the same storage, in this process and in others (an instance
//     is a Store value; two instances of one storage in one process are two
//     holders, like two processes).
//   - A run whose lease is held by a live holder is refused with an error
//     for which errors.Is(err, ErrLeaseHeld) holds, and errors.As finds a
//     *LeaseHeldError naming the holder as it recorded itself (host, pid,
//     token, since). Nothing is changed.
//   - Liveness comes from the operating system or the database, never from
//     writes made while the lease is held: a holder whose process dies (kill
//     -9, power loss, a vanished machine) loses its lease without running
//     any code. How fast a dead holder is detected is the implementation's
//     documented bound. Holding a lease costs no durable write per step.
//   - The lease of a dead holder is taken over: AcquireLease succeeds and
//     the Lease's TakenOver names the dead holder with reason
//     TakeoverHolderDead. A lease that was released is free: TakenOver is
//     nil.
//   - req.TakeOver forces the lease away from a live holder: AcquireLease
//     succeeds, TakenOver names the holder with reason TakeoverForced, and
//     the holder's Lost channel is closed within the implementation's
//     documented bound.
//   - Lost is closed when the holder can no longer vouch for its lease: it
//     was forced away, or the store lost the means of holding it (the
//     database session ended). The Runner then cancels the run's context:
//     the invocation stops before its next effect.
//   - Release ends the lease and closes Lost. It is idempotent. It never
//     frees a lease that another holder has taken since: after a forced
//     take-over, the old holder's Release leaves the new holder's lease
//     alone. A Release that returns an error has still given the lease up
//     as far as this process can; what it could not undo, the liveness
//     mechanism undoes (a closed file, an ended session).
//   - Cancellation: AcquireLease with a done ctx fails with an error that
//     wraps ctx.Err() and holds nothing. Release gives the lease up even
//     when ctx is done (the Runner calls it on a detached context).
//   - Errors other than ErrLeaseHeld are store failures: the Runner returns
//     them as a *PersistenceError.
//   - Concurrency: AcquireLease and the methods of a Lease are safe for
//     concurrent use.
//
// A lease never replaces the sequence rule: a wrong lease decision (a
// forced take-over of a holder that was alive, a clock or network that
// lied) may cost one effect, but the stale holder's next Append fails with
// ErrSeqConflict and the log stays whole.
type Leaser interface {
	AcquireLease(ctx context.Context, runID string, req LeaseRequest) (Lease, error)
}

// Lease is a held lease on one run (see Leaser).
type Lease interface {
	// TakenOver describes the holder this lease took the run from, with To
	// set to the new owner: nil when the lease was free.
	TakenOver() *LeaseTakeover
	// Lost is closed when the lease is lost or released.
	Lost() <-chan struct{}
	// Release ends the lease.
	Release(ctx context.Context) error
}

// LeaseProber is optional on a Leaser: LiveHolder reports the live holder
// of a run's lease without acquiring it — the holder and true when the
// lease is held by a live holder (of this instance or another), false when
// it is free or its holder is dead. It writes nothing and takes no lock
// that another acquisition could meet for longer than the probe itself.
// Resume uses it, when the store also lists runs, to refuse a run whose
// open action has a child run live elsewhere.
type LeaseProber interface {
	LiveHolder(ctx context.Context, runID string) (LeaseOwner, bool, error)
}

// LeaseRequest is what AcquireLease is asked for.
type LeaseRequest struct {
	// Owner is who asks; its Token must not be empty.
	Owner LeaseOwner
	// TakeOver forces the lease away from a live holder.
	TakeOver bool
}

// LeaseOwner names the holder of a lease: a process on a host, and a random
// token that tells its leases apart (and from an earlier process with the
// same pid).
type LeaseOwner struct {
	Host  string `json:"host"`
	PID   int    `json:"pid"`
	Token string `json:"token"`
	// Since is when the lease was acquired, by the holder's clock: for
	// people, never for logic.
	Since time.Time `json:"since"`
}

func (o LeaseOwner) String() string {
	if o.Token == "" {
		return "an unknown holder"
	}
	return fmt.Sprintf("pid %d on %s (lease %s) since %s", o.PID, o.Host, o.Token, o.Since.Format(time.RFC3339))
}

// ErrLeaseHeld is returned by Run and Resume when another holder's lease on
// the run is live. Returned errors are *LeaseHeldError values.
var ErrLeaseHeld = errors.New("polyloop: the run is held by another live process")

// ErrLeaseLost marks an invocation that stopped because its lease was lost
// (taken over by force, or the store could no longer hold it): the run's
// context was cancelled, and the error also satisfies
// errors.Is(err, context.Canceled). The run is unfinished; the new holder,
// or a later Resume, continues it.
var ErrLeaseLost = errors.New("polyloop: the run's lease was lost")

// LeaseHeldError names the live holder of a run's lease.
type LeaseHeldError struct {
	RunID  string
	Holder LeaseOwner
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("polyloop: run %q is held by %s", e.RunID, e.Holder)
}

// Is makes errors.Is(err, ErrLeaseHeld) true.
func (e *LeaseHeldError) Is(target error) bool { return target == ErrLeaseHeld }

// KindLeaseTakeover records that an invocation took a run's lease over from
// another holder.
const KindLeaseTakeover RecordKind = "lease_takeover"

// TakeoverReason says why a lease was taken over.
type TakeoverReason string

// The take-over reasons.
const (
	// TakeoverHolderDead: the holder was dead (its lock was gone) without
	// having released the lease.
	TakeoverHolderDead TakeoverReason = "holder_dead"
	// TakeoverForced: the holder was alive as far as the store could tell,
	// and the lease was taken by explicit request (LeaseRequest.TakeOver).
	TakeoverForced TakeoverReason = "forced"
)

// LeaseTakeover is the record of a take-over: who took the run's lease
// from whom, and why. It may appear anywhere after run_started and before
// run_finished; it changes nothing in the run's history or totals.
type LeaseTakeover struct {
	From   LeaseOwner     `json:"from"`
	To     LeaseOwner     `json:"to"`
	Reason TakeoverReason `json:"reason"`
}

func (*LeaseTakeover) recordBody() {}

// Kind implements RecordBody.
func (*LeaseTakeover) Kind() RecordKind { return KindLeaseTakeover }

// Validate implements RecordBody.
func (b *LeaseTakeover) Validate() error {
	if b.Reason != TakeoverHolderDead && b.Reason != TakeoverForced {
		return fmt.Errorf("lease_takeover: unknown reason %q", b.Reason)
	}
	if b.To.Token == "" {
		return fmt.Errorf("lease_takeover: empty new owner token")
	}
	return nil
}

// checkOpenChildren refuses to resume a run whose open action (an action
// intent without its step record) has an unfinished child run whose lease
// is live: that child is still being driven elsewhere, and the action's
// outcome with it. It needs a store that lists runs and probes leases;
// without, the replayed action meets the child's lease in InvokeChild. A
// take-over skips the check: it is carried to the children the replayed
// action resumes.
func (r *Runner) checkOpenChildren(ctx context.Context, runID string, plan ResumePlan, takeOver bool) error {
	if takeOver || plan.Action != PlanReplayAction && plan.Action != PlanStopUnknown && plan.Action != PlanReconcile {
		return nil
	}
	prober, ok := r.Store.(LeaseProber)
	lister, ok2 := r.Store.(RunLister)
	if !ok || !ok2 {
		return nil
	}
	unfinished := false
	kids, err := lister.ListRuns(ctx, RunFilter{ParentRunID: runID, Finished: &unfinished})
	if err != nil {
		return persistenceError("read", runID, err)
	}
	step := runID + "/" + strconv.Itoa(plan.Step)
	for _, k := range kids {
		if !strings.HasPrefix(k.RunID, step+".") && !strings.HasPrefix(k.RunID, step+":") && !strings.HasPrefix(k.RunID, step+"-") {
			continue
		}
		holder, live, err := prober.LiveHolder(ctx, k.RunID)
		if err != nil {
			return persistenceError("lease", k.RunID, err)
		}
		if live {
			return &LeaseHeldError{RunID: k.RunID, Holder: holder}
		}
	}
	return nil
}

// leaseReleaseTimeout bounds the release of a lease when the invocation
// returns, on a context detached from the run's.
const leaseReleaseTimeout = 5 * time.Second

// heldLease is the lease an invocation holds. A nil *heldLease (a store
// without leases) is valid: every method does nothing.
type heldLease struct {
	lease  Lease
	cancel context.CancelCauseFunc
	done   chan struct{}
	wg     sync.WaitGroup
}

// acquireLease acquires runID's lease when the store is a Leaser and
// returns it with a context that is cancelled, with cause ErrLeaseLost,
// when the lease is lost. Without a Leaser it returns nil and ctx.
func (r *Runner) acquireLease(ctx context.Context, runID string, takeOver bool) (*heldLease, context.Context, error) {
	l, ok := r.Store.(Leaser)
	if !ok {
		return nil, ctx, nil
	}
	// Since is read from the wall clock, not r.Clock: the lease is no part
	// of the log's timeline.
	owner := LeaseOwner{Host: leaseHost(), PID: os.Getpid(), Token: newLeaseToken(), Since: time.Now()}
	lease, err := l.AcquireLease(ctx, runID, LeaseRequest{Owner: owner, TakeOver: takeOver})
	if err != nil {
		if errors.Is(err, ErrLeaseHeld) {
			return nil, ctx, err
		}
		if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
			return nil, ctx, err
		}
		return nil, ctx, persistenceError("lease", runID, err)
	}
	h := &heldLease{lease: lease, done: make(chan struct{})}
	lctx, cancel := context.WithCancelCause(ctx)
	h.cancel = cancel
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		select {
		case <-lease.Lost():
			cancel(ErrLeaseLost)
		case <-h.done:
		}
	}()
	return h, lctx, nil
}

// takenOver is the take-over record to write, or nil.
func (h *heldLease) takenOver() *LeaseTakeover {
	if h == nil {
		return nil
	}
	return h.lease.TakenOver()
}

// record queues the take-over record, if any, with the driver's next write.
func (h *heldLease) record(m *machine) {
	if t := h.takenOver(); t != nil {
		m.add(t)
	}
}

// result marks an invocation's error with ErrLeaseLost when the lease was
// lost while it ran.
func (h *heldLease) result(res RunResult, err error) (RunResult, error) {
	if h == nil || err == nil {
		return res, err
	}
	select {
	case <-h.lease.Lost():
		return res, fmt.Errorf("%w: %w", ErrLeaseLost, err)
	default:
		return res, err
	}
}

// release gives the lease up, on a context detached from the run's. Its
// error is dropped: the run's outcome is already durable, and what a failed
// release could not undo the store's liveness mechanism does (see Leaser).
func (h *heldLease) release(ctx context.Context) {
	if h == nil {
		return
	}
	close(h.done)
	h.wg.Wait()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseReleaseTimeout)
	defer cancel()
	_ = h.lease.Release(rctx)
	h.cancel(nil)
}

var hostOnce = sync.OnceValue(func() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown-host"
	}
	return h
})

func leaseHost() string { return hostOnce() }

func newLeaseToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
