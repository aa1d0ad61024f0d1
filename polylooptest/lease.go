package polylooptest

import (
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// LeaseHarness tells TestLeaser how to drive a polyloop.Leaser. Only New is
// required; every check that needs a missing field is skipped with the
// reason logged.
type LeaseHarness struct {
	// New returns a leaser on fresh, empty storage. It is called once or
	// more per subtest, from a goroutine other than the test's: use
	// t.TempDir and t.Cleanup.
	New func(t testing.TB) polyloop.Leaser
	// Peer returns another instance on the same storage as l, as another
	// process would open it. Nil: the checks use l itself as its own peer.
	Peer func(t testing.TB, l polyloop.Leaser) polyloop.Leaser
	// Crash makes the holder of lease (acquired from l) vanish as a process
	// killed with SIGKILL would: nothing is released. It returns once the
	// store can see that the holder is dead (for a database: its session
	// has ended). Nil: DeadHolderTakenOver is skipped.
	Crash func(t testing.TB, l polyloop.Leaser, lease polyloop.Lease)
	// LostWithin is how soon a holder forced away must see Lost closed
	// (DefaultLostWithin when zero): the implementation's documented bound.
	LostWithin time.Duration
	// Skip names checks the implementation cannot honour, with the reason
	// logged when each is skipped. A name that is no check fails the suite.
	Skip map[string]string
	// Timeout is the watchdog of each subtest (DefaultTimeout when zero).
	Timeout time.Duration
}

// DefaultLostWithin is how soon, by default, a holder forced away must see
// its Lease's Lost channel closed.
const DefaultLostWithin = 5 * time.Second

// TestLeaser checks that the leasers made by h honour the polyloop.Leaser
// contract. Run it with -race.
//
// The checks (subtest names, usable as keys of h.Skip):
//   - FreeLease: a free run's lease is granted with no take-over; Release
//     closes Lost, is idempotent, and frees the run without leaving a
//     take-over behind.
//   - HeldRefused: while a lease is held, another acquisition — from a peer
//     or from the same instance — fails with polyloop.ErrLeaseHeld and a
//     *polyloop.LeaseHeldError naming the holder (host, pid, token, since);
//     the holder keeps its lease.
//   - RunsIsolated: runs whose ids differ by case, by a prefix, by '/', '%'
//     or '_', by length (a 300-byte id) or by unicode hold separate leases.
//   - DeadHolderTakenOver: with Crash, a dead holder's lease is granted to
//     the next acquisition at once, naming the dead holder
//     (polyloop.TakeoverHolderDead).
//   - ForcedTakeOver: LeaseRequest.TakeOver takes a live holder's lease
//     (polyloop.TakeoverForced); the old holder's Lost closes within
//     LostWithin; others are refused naming the new holder, also after the
//     old holder's Release; the new holder's Release frees the run.
//   - FreeAfterForce: once the holder that forced a lease away releases
//     it, the forced-away holder's own instance grants it at once, before
//     that holder has released its stale lease.
//   - ForceFreeLease: TakeOver on a free run is a plain grant.
//   - ConcurrentAcquire: acquisitions of one run racing from several
//     goroutines and instances: exactly one wins each round, the others get
//     polyloop.ErrLeaseHeld.
//   - CancelledContext: AcquireLease with a cancelled context fails with an
//     error that wraps context.Canceled and holds nothing.
//   - EmptyToken: a request whose owner has no token is refused, and holds
//     nothing.
//   - LiveHolder: if the leaser is a polyloop.LeaseProber, a peer's probe
//     reports a free run as free, a held one with its holder, a forced one
//     with its new holder, a dead holder's (with Crash) and a released one
//     as free; a probe does not take the lease.
func TestLeaser(t *testing.T, h LeaseHarness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("polylooptest: LeaseHarness.New is required")
	}
	runSuite(t, "Leaser", h, h.settings(), leaseChecks)
}

var leaseChecks = []check[LeaseHarness]{
	{"FreeLease", ruled(ruleLeaseFree, checkLeaseFree)},
	{"HeldRefused", ruled(ruleLeaseExclusive, checkLeaseHeld)},
	{"RunsIsolated", ruled(ruleLeaseIsolated, checkLeaseIsolated)},
	{"DeadHolderTakenOver", ruled(ruleLeaseDeadHolder, checkLeaseDeadHolder)},
	{"ForcedTakeOver", ruled(ruleLeaseForced, checkLeaseForced)},
	{"FreeAfterForce", ruled(ruleLeaseAfterForce, checkLeaseFreeAfterForce)},
	{"ForceFreeLease", ruled(ruleLeaseForceFree, checkLeaseForceFree)},
	{"ConcurrentAcquire", ruled(ruleLeaseConcurrent, checkLeaseConcurrent)},
	{"CancelledContext", ruled(ruleLeaseCancelled, checkLeaseCancelled)},
	{"EmptyToken", ruled(ruleLeaseToken, checkLeaseEmptyToken)},
	{"LiveHolder", ruled(ruleLeaseLiveHolder, checkLeaseLiveHolder)},
}

func (h LeaseHarness) settings() settings { return newSettings(h.Timeout, 0, h.Skip) }

func (h LeaseHarness) lostWithin() time.Duration {
	if h.LostWithin <= 0 {
		return DefaultLostWithin
	}
	return h.LostWithin
}

func (h LeaseHarness) peer(t testing.TB, l polyloop.Leaser) polyloop.Leaser {
	if h.Peer == nil {
		return l
	}
	return h.Peer(t, l)
}
