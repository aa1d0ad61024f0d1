package polylooptest

import (
	"fmt"
	"runtime"
	"time"
)

// goroutineBaseline is the number of goroutines before a call; leaked
// compares against it. The count covers the whole process, so the leak
// checks are only meaningful when no other test runs in parallel with the
// suite: call the suites from tests that do not use t.Parallel.
func goroutineBaseline() int { return runtime.NumGoroutine() }

// leaked waits up to settleWithin for the number of goroutines to fall back
// to base (goroutines that are ending need a moment), and returns an error
// with a goroutine dump if it does not.
func leaked(base int, what string) error {
	deadline := time.Now().Add(settleWithin)
	for {
		n := runtime.NumGoroutine()
		if n <= base {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s leaked goroutines: %d before the call, still %d %v after it returned; goroutines:\n%s",
				what, base, n, settleWithin, goroutineDump())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// settled calls f until it returns nil or settleWithin passes, and returns
// its last error.
func settled(f func() error) error {
	deadline := time.Now().Add(settleWithin)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}
