package polylooptest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"testing"
	"time"
)

// Defaults of the timing fields of every harness.
const (
	// DefaultTimeout is the watchdog of one subtest: a check that has not
	// finished by then fails with a goroutine dump instead of hanging.
	DefaultTimeout = 10 * time.Second
	// DefaultCancelWithin is how soon a call whose context is cancelled must
	// return.
	DefaultCancelWithin = 2 * time.Second
	// settleWithin bounds how long the leak checks wait for goroutines (and
	// the harness's leftover checks) to settle.
	settleWithin = 2 * time.Second
)

// check is one named check of a suite. run returns nil when the check
// passes, a skip (see skipf) when the implementation cannot be driven into
// the situation, or an error describing the failure.
type check[H any] struct {
	name string
	run  func(e *env, h H) error
}

// env is what a running check gets: the subtest's TB (for the harness's
// factories) and a context the watchdog cancels when it fires.
type env struct {
	t            testing.TB
	ctx          context.Context
	cancelWithin time.Duration
}

func (e *env) logf(format string, args ...any) { e.t.Logf(format, args...) }

// skipError marks a check that could not run, with the reason.
type skipError struct{ reason string }

func (s *skipError) Error() string { return "skipped: " + s.reason }

func skipf(format string, args ...any) error {
	return &skipError{reason: fmt.Sprintf(format, args...)}
}

// outcome is what running one check found.
type outcome struct {
	skip string // reason, when skipped
	err  error  // failure, when failed
	// stopped: the check's goroutine ended through runtime.Goexit (the
	// harness called t.FailNow, t.Fatal or t.Skip from a factory).
	stopped bool
}

// settings are the timing fields shared by every harness.
type settings struct {
	timeout      time.Duration
	cancelWithin time.Duration
	skip         map[string]string
}

func newSettings(timeout, cancelWithin time.Duration, skip map[string]string) settings {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if cancelWithin <= 0 {
		cancelWithin = DefaultCancelWithin
	}
	return settings{timeout: timeout, cancelWithin: cancelWithin, skip: skip}
}

// runSuite runs every check as a subtest of t.
func runSuite[H any](t *testing.T, suite string, h H, s settings, checks []check[H]) {
	t.Helper()
	if err := unknownSkips(suite, s.skip, checks); err != nil {
		t.Error(err)
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			report(t, runCheck(t, s, h, c))
		})
	}
}

// unknownSkips reports names in the harness's Skip map that are no check of
// the suite, so that a typo does not silently run (or skip) the wrong check.
func unknownSkips[H any](suite string, skip map[string]string, checks []check[H]) error {
	known := map[string]bool{}
	for _, c := range checks {
		known[c.name] = true
	}
	var bad []string
	for name := range skip {
		if !known[name] {
			bad = append(bad, name)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return fmt.Errorf("polylooptest: %s harness Skip names unknown checks %q", suite, bad)
}

// report turns an outcome into calls on tb. It takes a testing.TB so that
// the kit's own tests can run it against a recording TB.
func report(tb testing.TB, o outcome) {
	tb.Helper()
	switch {
	case o.err != nil:
		tb.Error(o.err)
	case o.skip != "":
		tb.Skip(o.skip)
	case o.stopped && !tb.Failed() && !tb.Skipped():
		tb.Error("polylooptest: the check stopped without a result (runtime.Goexit in the harness?)")
	}
}

// runCheck runs one check in its own goroutine under the watchdog. A panic
// in the check (that is, in the implementation) is recovered and reported as
// a failure with its stack.
func runCheck[H any](t testing.TB, s settings, h H, c check[H]) outcome {
	if reason, ok := s.skip[c.name]; ok {
		if strings.TrimSpace(reason) == "" {
			return outcome{err: fmt.Errorf("polylooptest: harness skips %s without a reason; give one", c.name)}
		}
		return outcome{skip: "skipped by the harness: " + reason}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := &env{t: t, ctx: ctx, cancelWithin: s.cancelWithin}
	done := make(chan outcome, 1)
	go func() {
		finished := false
		defer func() {
			if r := recover(); r != nil {
				done <- outcome{err: broke(ruleNoPanic, "polylooptest: %s panicked: %v\n%s", c.name, r, debug.Stack())}
			} else if !finished {
				done <- outcome{stopped: true}
			}
		}()
		err := c.run(e, h)
		finished = true
		done <- classify(err)
	}()
	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	select {
	case o := <-done:
		return o
	case <-timer.C:
		return outcome{err: broke(ruleReturns, "polylooptest: %s did not finish within %v: the implementation hangs (the timeout is the harness's Timeout); goroutines:\n%s",
			c.name, s.timeout, goroutineDump())}
	}
}

func classify(err error) outcome {
	var s *skipError
	if errors.As(err, &s) {
		return outcome{skip: s.reason}
	}
	return outcome{err: err}
}

// goroutineDump returns the stacks of all goroutines, cut to a bound.
func goroutineDump() string {
	buf := make([]byte, 256<<10)
	n := runtime.Stack(buf, true)
	const limit = 64 << 10
	if n > limit {
		return string(buf[:limit]) + "\n... (cut)"
	}
	return string(buf[:n])
}
