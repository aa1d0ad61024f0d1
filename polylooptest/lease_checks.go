package polylooptest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/polyloop/polyloop"
)

// kitOwner is a sample lease owner: pid n, a fresh token, a since at
// microsecond precision.
func kitOwner(n int) polyloop.LeaseOwner {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return polyloop.LeaseOwner{Host: "kit-host", PID: n, Token: "kit-" + hex.EncodeToString(b[:]),
		Since: time.Date(2026, 12, 1, 10, 0, n%60, 123456000, time.UTC)}
}

func acquire(e *env, l polyloop.Leaser, runID string, o polyloop.LeaseOwner, force bool) (polyloop.Lease, error) {
	return l.AcquireLease(e.ctx, runID, polyloop.LeaseRequest{Owner: o, TakeOver: force})
}

// mustAcquire acquires a lease that must be granted.
func mustAcquire(e *env, l polyloop.Leaser, runID string, o polyloop.LeaseOwner, force bool) (polyloop.Lease, error) {
	ls, err := acquire(e, l, runID, o, force)
	if err != nil {
		return nil, fmt.Errorf("AcquireLease(%q) by %s: %w", runID, o.Token, err)
	}
	if ls == nil {
		return nil, fmt.Errorf("AcquireLease(%q) returned a nil lease and no error", runID)
	}
	return ls, nil
}

// release releases a lease, registering nothing: the checks release what
// they hold on every path through deferred calls.
func release(e *env, ls polyloop.Lease) error {
	if ls == nil {
		return nil
	}
	return ls.Release(e.ctx)
}

// sameOwner compares two owners; since may lose precision below the
// microsecond.
func sameOwner(got, want polyloop.LeaseOwner) error {
	if got.Host != want.Host || got.PID != want.PID || got.Token != want.Token {
		return fmt.Errorf("holder %+v, want %+v", got, want)
	}
	if d := got.Since.Sub(want.Since); d > time.Microsecond || d < -time.Microsecond {
		return fmt.Errorf("holder since %v, want %v", got.Since, want.Since)
	}
	return nil
}

// expectHeld checks that err refuses runID naming holder.
func expectHeld(err error, runID string, holder polyloop.LeaseOwner) error {
	if err == nil {
		return fmt.Errorf("AcquireLease(%q) was granted while %s holds it", runID, holder.Token)
	}
	if !errors.Is(err, polyloop.ErrLeaseHeld) {
		return fmt.Errorf("AcquireLease(%q) while held: %v, want an error that errors.Is ErrLeaseHeld", runID, err)
	}
	var he *polyloop.LeaseHeldError
	if !errors.As(err, &he) {
		return fmt.Errorf("AcquireLease(%q) while held: %T does not carry a *polyloop.LeaseHeldError", runID, err)
	}
	if he.RunID != runID {
		return fmt.Errorf("LeaseHeldError names run %q, want %q", he.RunID, runID)
	}
	if err := sameOwner(he.Holder, holder); err != nil {
		return fmt.Errorf("LeaseHeldError for %q: %w", runID, err)
	}
	return nil
}

func expectTakeover(ls polyloop.Lease, from, to polyloop.LeaseOwner, reason polyloop.TakeoverReason) error {
	tk := ls.TakenOver()
	if tk == nil {
		return fmt.Errorf("TakenOver is nil, want a take-over from %s (%s)", from.Token, reason)
	}
	if tk.Reason != reason {
		return fmt.Errorf("take-over reason %q, want %q", tk.Reason, reason)
	}
	if err := sameOwner(tk.From, from); err != nil {
		return fmt.Errorf("take-over from: %w", err)
	}
	if err := sameOwner(tk.To, to); err != nil {
		return fmt.Errorf("take-over to: %w", err)
	}
	return tk.Validate()
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func checkLeaseFree(e *env, h LeaseHarness) error {
	l := h.New(e.t)
	a := kitOwner(1)
	ls, err := mustAcquire(e, l, "run-free", a, false)
	if err != nil {
		return err
	}
	if tk := ls.TakenOver(); tk != nil {
		return fmt.Errorf("a free run's lease reports a take-over: %+v", *tk)
	}
	if isClosed(ls.Lost()) {
		return errors.New("a lease just granted has Lost closed")
	}
	if err := ls.Release(e.ctx); err != nil {
		return fmt.Errorf("Release: %w", err)
	}
	if !isClosed(ls.Lost()) {
		return errors.New("Release did not close Lost")
	}
	if err := ls.Release(e.ctx); err != nil {
		return fmt.Errorf("a second Release: %w", err)
	}
	b := kitOwner(2)
	ls2, err := mustAcquire(e, h.peer(e.t, l), "run-free", b, false)
	if err != nil {
		return fmt.Errorf("after Release: %w", err)
	}
	defer release(e, ls2)
	if tk := ls2.TakenOver(); tk != nil {
		return fmt.Errorf("the lease of a released run reports a take-over (a release is not a death): %+v", *tk)
	}
	return nil
}

func checkLeaseHeld(e *env, h LeaseHarness) error {
	l := h.New(e.t)
	p := h.peer(e.t, l)
	a := kitOwner(1)
	ls, err := mustAcquire(e, l, "run-held", a, false)
	if err != nil {
		return err
	}
	defer release(e, ls)
	for name, inst := range map[string]polyloop.Leaser{"peer": p, "same instance": l} {
		got, err := acquire(e, inst, "run-held", kitOwner(2), false)
		if got != nil {
			defer release(e, got)
		}
		if err := expectHeld(err, "run-held", a); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if isClosed(ls.Lost()) {
		return errors.New("a refused acquisition closed the holder's Lost")
	}
	return nil
}

// isolatedIDs differ from "r" and from each other in ways a store might
// fold: case, prefixes, separators, escapes, SQL and glob wildcards,
// length, unicode.
func isolatedIDs() []string {
	return []string{"r", "R", "r/1.0", "r/1.0:k", "r/1", "r%2F1.0", "r%", "r_", "r*", "r.lock", ".r", "r ", "ünï/ß",
		strings.Repeat("x", 300), strings.Repeat("x", 299) + "y"}
}

func checkLeaseIsolated(e *env, h LeaseHarness) error {
	l := h.New(e.t)
	p := h.peer(e.t, l)
	owners := map[string]polyloop.LeaseOwner{}
	for i, id := range isolatedIDs() {
		o := kitOwner(10 + i)
		ls, err := mustAcquire(e, l, id, o, false)
		if err != nil {
			return fmt.Errorf("with the other runs held: %w", err)
		}
		defer release(e, ls)
		owners[id] = o
	}
	for _, id := range isolatedIDs() {
		got, err := acquire(e, p, id, kitOwner(99), false)
		if got != nil {
			defer release(e, got)
		}
		if err := expectHeld(err, id, owners[id]); err != nil {
			return err
		}
	}
	return nil
}

func checkLeaseDeadHolder(e *env, h LeaseHarness) error {
	if h.Crash == nil {
		return skipf("LeaseHarness.Crash is nil")
	}
	l := h.New(e.t)
	a := kitOwner(1)
	ls, err := mustAcquire(e, l, "run-dead", a, false)
	if err != nil {
		return err
	}
	h.Crash(e.t, l, ls)
	b := kitOwner(2)
	ls2, err := mustAcquire(e, h.peer(e.t, l), "run-dead", b, false)
	if err != nil {
		return fmt.Errorf("after the holder died: %w", err)
	}
	defer release(e, ls2)
	return expectTakeover(ls2, a, b, polyloop.TakeoverHolderDead)
}

func checkLeaseForced(e *env, h LeaseHarness) error {
	l := h.New(e.t)
	p := h.peer(e.t, l)
	a, b, c := kitOwner(1), kitOwner(2), kitOwner(3)
	la, err := mustAcquire(e, l, "run-forced", a, false)
	if err != nil {
		return err
	}
	defer release(e, la)
	lb, err := mustAcquire(e, p, "run-forced", b, true)
	if err != nil {
		return fmt.Errorf("forced: %w", err)
	}
	defer release(e, lb)
	if err := expectTakeover(lb, a, b, polyloop.TakeoverForced); err != nil {
		return err
	}
	select {
	case <-la.Lost():
	case <-time.After(h.lostWithin()):
		return fmt.Errorf("the holder forced away did not see Lost closed within %v", h.lostWithin())
	}
	if isClosed(lb.Lost()) {
		return errors.New("the new holder's Lost is closed")
	}
	got, err := acquire(e, l, "run-forced", c, false)
	if got != nil {
		defer release(e, got)
	}
	if err := expectHeld(err, "run-forced", b); err != nil {
		return fmt.Errorf("after the forced take-over: %w", err)
	}
	if err := la.Release(e.ctx); err != nil {
		return fmt.Errorf("the old holder's Release: %w", err)
	}
	got, err = acquire(e, l, "run-forced", c, false)
	if got != nil {
		defer release(e, got)
	}
	if err := expectHeld(err, "run-forced", b); err != nil {
		return fmt.Errorf("after the old holder's Release: %w", err)
	}
	if err := lb.Release(e.ctx); err != nil {
		return fmt.Errorf("the new holder's Release: %w", err)
	}
	lc, err := mustAcquire(e, l, "run-forced", c, false)
	if err != nil {
		return fmt.Errorf("after the new holder's Release: %w", err)
	}
	defer release(e, lc)
	if tk := lc.TakenOver(); tk != nil {
		return fmt.Errorf("after both released, a take-over is reported: %+v", *tk)
	}
	return nil
}

func checkLeaseForceFree(e *env, h LeaseHarness) error {
	l := h.New(e.t)
	ls, err := mustAcquire(e, l, "run-force-free", kitOwner(1), true)
	if err != nil {
		return err
	}
	defer release(e, ls)
	if tk := ls.TakenOver(); tk != nil {
		return fmt.Errorf("TakeOver on a free run reports a take-over: %+v", *tk)
	}
	return nil
}

func checkLeaseConcurrent(e *env, h LeaseHarness) error {
	l := h.New(e.t)
	insts := []polyloop.Leaser{l, h.peer(e.t, l), l, h.peer(e.t, l)}
	const rounds, racers = 10, 8
	for round := range rounds {
		runID := fmt.Sprintf("run-race-%d", round)
		var wg sync.WaitGroup
		start := make(chan struct{})
		leases := make([]polyloop.Lease, racers)
		errs := make([]error, racers)
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				leases[i], errs[i] = acquire(e, insts[i%len(insts)], runID, kitOwner(i), false)
			}()
		}
		close(start)
		wg.Wait()
		won := 0
		var err error
		for i := range racers {
			switch {
			case errs[i] == nil && leases[i] != nil:
				won++
			case errors.Is(errs[i], polyloop.ErrLeaseHeld):
			case err == nil:
				err = fmt.Errorf("round %d, racer %d: %v, want the lease or ErrLeaseHeld", round, i, errs[i])
			}
		}
		for _, ls := range leases {
			_ = release(e, ls)
		}
		if err != nil {
			return err
		}
		if won != 1 {
			return fmt.Errorf("round %d: %d of %d racing acquisitions won, want exactly 1", round, won, racers)
		}
	}
	return nil
}

func checkLeaseCancelled(e *env, h LeaseHarness) error {
	l := h.New(e.t)
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	ls, err := l.AcquireLease(ctx, "run-cancelled", polyloop.LeaseRequest{Owner: kitOwner(1)})
	if ls != nil {
		defer release(e, ls)
	}
	if err == nil {
		return errors.New("AcquireLease with a cancelled context was granted")
	}
	if !errors.Is(err, context.Canceled) {
		return fmt.Errorf("AcquireLease with a cancelled context: %v, want an error that wraps context.Canceled", err)
	}
	ls2, err := mustAcquire(e, h.peer(e.t, l), "run-cancelled", kitOwner(2), false)
	if err != nil {
		return fmt.Errorf("after a cancelled acquisition: %w", err)
	}
	defer release(e, ls2)
	if tk := ls2.TakenOver(); tk != nil {
		return fmt.Errorf("a cancelled acquisition left a holder behind: %+v", *tk)
	}
	return nil
}

func checkLeaseEmptyToken(e *env, h LeaseHarness) error {
	l := h.New(e.t)
	o := kitOwner(1)
	o.Token = ""
	ls, err := acquire(e, l, "run-no-token", o, false)
	if ls != nil {
		defer release(e, ls)
	}
	if err == nil {
		return errors.New("a request without an owner token was granted")
	}
	if errors.Is(err, polyloop.ErrLeaseHeld) {
		return fmt.Errorf("a request without a token on a free run: %v (it is not held)", err)
	}
	ls2, err := mustAcquire(e, l, "run-no-token", kitOwner(2), false)
	if err != nil {
		return fmt.Errorf("after the refused request: %w", err)
	}
	return release(e, ls2)
}

func checkLeaseLiveHolder(e *env, h LeaseHarness) error {
	l := h.New(e.t)
	if _, ok := l.(polyloop.LeaseProber); !ok {
		return skipf("%T is not a polyloop.LeaseProber", l)
	}
	p := h.peer(e.t, l)
	probe := func(what string, want *polyloop.LeaseOwner) error {
		got, live, err := p.(polyloop.LeaseProber).LiveHolder(e.ctx, "run-probe")
		switch {
		case err != nil:
			return fmt.Errorf("LiveHolder %s: %w", what, err)
		case want == nil && live:
			return fmt.Errorf("LiveHolder %s: live, held by %s; want free", what, got)
		case want != nil && !live:
			return fmt.Errorf("LiveHolder %s: free, want held by %s", what, want.Token)
		case want != nil:
			if err := sameOwner(got, *want); err != nil {
				return fmt.Errorf("LiveHolder %s: %w", what, err)
			}
		}
		return nil
	}
	if err := probe("of a run never leased", nil); err != nil {
		return err
	}
	a, b := kitOwner(1), kitOwner(2)
	la, err := mustAcquire(e, l, "run-probe", a, false)
	if err != nil {
		return err
	}
	defer release(e, la)
	if err := probe("while held", &a); err != nil {
		return err
	}
	if isClosed(la.Lost()) {
		return errors.New("a probe took the lease from its holder")
	}
	lb, err := mustAcquire(e, p, "run-probe", b, true)
	if err != nil {
		return err
	}
	if err := probe("after a forced take-over", &b); err != nil {
		return err
	}
	if err := lb.Release(e.ctx); err != nil {
		return err
	}
	if err := probe("after the release", nil); err != nil {
		return err
	}
	if h.Crash == nil {
		return nil
	}
	c := kitOwner(3)
	lc, err := mustAcquire(e, l, "run-probe", c, false)
	if err != nil {
		return err
	}
	h.Crash(e.t, l, lc)
	return probe("after the holder died", nil)
}

func checkLeaseFreeAfterForce(e *env, h LeaseHarness) error {
	l := h.New(e.t)
	p := h.peer(e.t, l)
	la, err := mustAcquire(e, l, "run-free-after-force", kitOwner(1), false)
	if err != nil {
		return err
	}
	defer release(e, la)
	lb, err := mustAcquire(e, p, "run-free-after-force", kitOwner(2), true)
	if err != nil {
		return err
	}
	if err := lb.Release(e.ctx); err != nil {
		return err
	}
	c := kitOwner(3)
	lc, err := mustAcquire(e, l, "run-free-after-force", c, false)
	if err != nil {
		return fmt.Errorf("on the forced-away holder's instance, after the forcer released: %w", err)
	}
	return release(e, lc)
}
