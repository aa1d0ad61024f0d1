package polylooptest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// leaseFaults are the ways testLeaser breaks the Leaser contract; the zero
// value is a correct in-memory leaser.
type leaseFaults struct {
	noExclusion   bool // every acquisition is granted
	foldCase      bool // run ids are case-insensitive
	cutLong       bool // run ids are cut to 255 bytes (a file name limit)
	slashIsDir    bool // "r/1.0" shares the lease of "r"
	deadStaysHeld bool // a dead holder's lease is never taken over
	noPrevious    bool // TakenOver is always nil
	noForce       bool // TakeOver is ignored
	silentLoss    bool // a holder forced away never sees Lost closed
	releaseAny    bool // Release frees the run whoever holds it
	keepAfterFree bool // Release leaves the run held (by a dead holder)
	racy          bool // the check and the grant are not atomic
	ignoreCancel  bool // a cancelled context is not honoured
	noHolder      bool // LeaseHeldError does not name the holder
	anyToken      bool // an empty token is accepted
	probeDead     bool // LiveHolder reports a dead holder as live
	probeTakes    bool // LiveHolder acquires the lease
	phantom       bool // a forced acquisition of a free run reports a take-over
	stale         bool // an instance forced away from a run keeps refusing it
}

type testLeaser struct {
	leaseFaults
	b *leaseBacking
	// forcedAway, with the stale fault, are the runs this instance lost
	// to a forced take-over (guarded by b.mu).
	forcedAway map[string]bool
}

// leaseBacking is the storage that peers share.
type leaseBacking struct {
	mu   sync.Mutex
	held map[string]*testLease
}

type testLease struct {
	l     *testLeaser
	key   string
	owner polyloop.LeaseOwner
	prev  *polyloop.LeaseTakeover
	lost  chan struct{}
	once  sync.Once
	dead  bool
}

func newTestLeaser(f leaseFaults) *testLeaser {
	return &testLeaser{leaseFaults: f, b: &leaseBacking{held: map[string]*testLease{}}}
}

func (l *testLeaser) key(id string) string {
	if l.foldCase {
		id = strings.ToLower(id)
	}
	if l.cutLong && len(id) > 255 {
		id = id[:255]
	}
	if l.slashIsDir {
		id, _, _ = strings.Cut(id, "/")
	}
	return id
}

func (l *testLeaser) AcquireLease(ctx context.Context, runID string, req polyloop.LeaseRequest) (polyloop.Lease, error) {
	if err := ctx.Err(); err != nil && !l.ignoreCancel {
		return nil, err
	}
	if req.Owner.Token == "" && !l.anyToken {
		return nil, errors.New("testLeaser: no owner token")
	}
	k := l.key(runID)
	l.b.mu.Lock()
	cur := l.b.held[k]
	if l.racy {
		l.b.mu.Unlock()
		time.Sleep(time.Millisecond)
		l.b.mu.Lock()
	}
	defer l.b.mu.Unlock()
	if l.stale && l.forcedAway[k] {
		return nil, &polyloop.LeaseHeldError{RunID: runID, Holder: polyloop.LeaseOwner{Token: "stale"}}
	}
	ls := &testLease{l: l, key: k, owner: req.Owner, lost: make(chan struct{})}
	reason := polyloop.TakeoverReason("")
	switch {
	case cur == nil && req.TakeOver && l.phantom:
		ls.prev = &polyloop.LeaseTakeover{To: req.Owner, Reason: polyloop.TakeoverForced}
	case cur == nil || l.noExclusion:
	case cur.dead && !l.deadStaysHeld:
		reason = polyloop.TakeoverHolderDead
	case !req.TakeOver || l.noForce:
		holder := cur.owner
		if l.noHolder {
			holder = polyloop.LeaseOwner{}
		}
		return nil, &polyloop.LeaseHeldError{RunID: runID, Holder: holder}
	default:
		if !l.silentLoss {
			cur.close()
		}
		if cur.l.forcedAway == nil {
			cur.l.forcedAway = map[string]bool{}
		}
		cur.l.forcedAway[k] = true
		reason = polyloop.TakeoverForced
	}
	if reason != "" && !l.noPrevious {
		ls.prev = &polyloop.LeaseTakeover{From: cur.owner, To: req.Owner, Reason: reason}
	}
	l.b.held[k] = ls
	return ls, nil
}

func (ls *testLease) TakenOver() *polyloop.LeaseTakeover { return ls.prev }
func (ls *testLease) Lost() <-chan struct{}              { return ls.lost }
func (ls *testLease) close()                             { ls.once.Do(func() { close(ls.lost) }) }

func (ls *testLease) Release(context.Context) error {
	b := ls.l.b
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case ls.l.keepAfterFree:
		ls.dead = true
	case b.held[ls.key] == ls || ls.l.releaseAny:
		delete(b.held, ls.key)
	}
	ls.close()
	return nil
}

func (l *testLeaser) LiveHolder(ctx context.Context, runID string) (polyloop.LeaseOwner, bool, error) {
	if l.probeTakes {
		ls, err := l.AcquireLease(ctx, runID, polyloop.LeaseRequest{Owner: polyloop.LeaseOwner{Token: "probe"}, TakeOver: true})
		if err != nil {
			return polyloop.LeaseOwner{}, false, err
		}
		defer ls.Release(ctx)
		if tk := ls.TakenOver(); tk != nil && tk.Reason == polyloop.TakeoverForced {
			return tk.From, true, nil
		}
		return polyloop.LeaseOwner{}, false, nil
	}
	l.b.mu.Lock()
	defer l.b.mu.Unlock()
	cur := l.b.held[l.key(runID)]
	if cur == nil || cur.dead && !l.probeDead {
		return polyloop.LeaseOwner{}, false, nil
	}
	return cur.owner, true, nil
}

func leaseHarnessWith(f leaseFaults) LeaseHarness {
	return LeaseHarness{
		New: func(testing.TB) polyloop.Leaser { return newTestLeaser(f) },
		Peer: func(_ testing.TB, l polyloop.Leaser) polyloop.Leaser {
			return &testLeaser{leaseFaults: f, b: l.(*testLeaser).b}
		},
		LostWithin: 200 * time.Millisecond,
		Crash: func(_ testing.TB, _ polyloop.Leaser, ls polyloop.Lease) {
			tl := ls.(*testLease)
			tl.l.b.mu.Lock()
			defer tl.l.b.mu.Unlock()
			tl.dead = true
		},
	}
}

func TestGoodLeaserPasses(t *testing.T) { TestLeaser(t, leaseHarnessWith(leaseFaults{})) }

// hangingLeaser blocks in AcquireLease until the test ends.
type hangingLeaser struct{ release chan struct{} }

func (h hangingLeaser) AcquireLease(context.Context, string, polyloop.LeaseRequest) (polyloop.Lease, error) {
	<-h.release
	return nil, errors.New("hangingLeaser: released")
}

func brokenLeaseCases() []brokenCase {
	c := func(check string, f leaseFaults) brokenCase {
		h := leaseHarnessWith(f)
		return brokenCase{"Leaser", check, leaseRuleOf[check], func(t *testing.T) outcome { return runNamed(t, leaseChecks, check, h, h.settings()) }}
	}
	hang := leaseHarnessWith(leaseFaults{})
	hang.Timeout = 200 * time.Millisecond
	hang.New = func(t testing.TB) polyloop.Leaser {
		ch := make(chan struct{})
		t.Cleanup(func() { close(ch) })
		return hangingLeaser{ch}
	}
	return []brokenCase{
		c("HeldRefused", leaseFaults{noExclusion: true}),
		c("HeldRefused", leaseFaults{noHolder: true}),
		c("FreeLease", leaseFaults{keepAfterFree: true}),
		c("RunsIsolated", leaseFaults{foldCase: true}),
		c("RunsIsolated", leaseFaults{cutLong: true}),
		c("RunsIsolated", leaseFaults{slashIsDir: true}),
		c("DeadHolderTakenOver", leaseFaults{deadStaysHeld: true}),
		c("DeadHolderTakenOver", leaseFaults{noPrevious: true}),
		c("ForcedTakeOver", leaseFaults{noForce: true}),
		c("ForcedTakeOver", leaseFaults{silentLoss: true}),
		c("ForcedTakeOver", leaseFaults{releaseAny: true}),
		c("ForcedTakeOver", leaseFaults{noPrevious: true}),
		c("ConcurrentAcquire", leaseFaults{racy: true}),
		c("CancelledContext", leaseFaults{ignoreCancel: true}),
		c("EmptyToken", leaseFaults{anyToken: true}),
		c("LiveHolder", leaseFaults{probeDead: true}),
		c("LiveHolder", leaseFaults{probeTakes: true}),
		c("FreeAfterForce", leaseFaults{stale: true}),
		c("ForceFreeLease", leaseFaults{phantom: true}),
		{"Leaser", "FreeLease", ruleReturns, func(t *testing.T) outcome { return runNamed(t, leaseChecks, "FreeLease", hang, hang.settings()) }},
	}
}

// leaseRuleOf is the rule each lease check checks.
var leaseRuleOf = map[string]rule{
	"FreeLease": ruleLeaseFree, "HeldRefused": ruleLeaseExclusive, "RunsIsolated": ruleLeaseIsolated,
	"DeadHolderTakenOver": ruleLeaseDeadHolder, "ForcedTakeOver": ruleLeaseForced, "FreeAfterForce": ruleLeaseAfterForce,
	"ForceFreeLease": ruleLeaseForceFree, "ConcurrentAcquire": ruleLeaseConcurrent, "CancelledContext": ruleLeaseCancelled,
	"EmptyToken": ruleLeaseToken, "LiveHolder": ruleLeaseLiveHolder,
}
