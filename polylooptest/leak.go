package polylooptest

import (
	"bytes"
	"reflect"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Leak detection works like go.uber.org/goleak: before a call the kit records
// the ids of the live goroutines; after the call it reports goroutines that
// are new and still alive once settleWithin has passed. Comparing sets
// rather than counts means goroutines of earlier checks that end during the
// window cannot hide a leak. A goroutine started by another test running in
// parallel still looks new, so call the suites from tests that do not use
// t.Parallel.

// goroutineSet holds live goroutines: id → stack.
type goroutineSet map[uint64]string

// Bounds of the wait for the goroutine count to stop moving before a
// baseline is taken.
const (
	stablePolls  = 4
	stableWithin = 500 * time.Millisecond
	pollEvery    = 5 * time.Millisecond
)

// goroutineBaseline waits (at most stableWithin) for the number of
// goroutines to stop changing, so that goroutines an earlier check is still
// starting are not blamed on the next call, and returns the live set.
func goroutineBaseline() goroutineSet {
	deadline := time.Now().Add(stableWithin)
	last, same := runtime.NumGoroutine(), 0
	for same < stablePolls && time.Now().Before(deadline) {
		time.Sleep(pollEvery)
		n := runtime.NumGoroutine()
		if n == last {
			same++
		} else {
			last, same = n, 0
		}
	}
	return liveGoroutines()
}

// leaked waits up to settleWithin for every goroutine that is not in base
// (and is not the kit's, the runtime's or the testing package's own) to
// end, and returns an error with their stacks if some do not.
func leaked(base goroutineSet, what string) error {
	return leakedWithin(base, what, settleWithin)
}

// leakedWithin is leaked with the settle window as a parameter.
func leakedWithin(base goroutineSet, what string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		extra := newGoroutines(base, liveGoroutines())
		if len(extra) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return broke(ruleNoGoroutineLeak, "%s leaked %d goroutine(s): started during the call and still alive %v after it returned:\n%s",
				what, len(extra), within, cutStacks(extra))
		}
		time.Sleep(pollEvery)
	}
}

// newGoroutines returns the stacks, ordered by id, of the goroutines in now
// that are not in base and not ignorable.
func newGoroutines(base, now goroutineSet) []string {
	var ids []uint64
	for id, stack := range now {
		if _, old := base[id]; !old && !ignorable(stack) {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = now[id]
	}
	return out
}

// kitWrappers are the functions whose goroutines the kit itself starts to
// run a call under a deadline (returnsPromptly, inFlight). Once the call
// has returned, such a goroutine only delivers its result and ends.
// (Named through the package path: a reference to the functions themselves
// would be an initialisation cycle.)
var kitWrappers = []string{kitPackage + ".returnsPromptly.func", kitPackage + ".inFlight.func"}

var kitPackage = reflect.TypeFor[goroutineSet]().PkgPath()

// ignorable reports whether a goroutine's stack belongs to the kit's own
// wrappers, to the testing package (a test goroutine waiting for its
// subtests or for parallel siblings), or to the runtime and os/signal.
func ignorable(stack string) bool {
	funcs := stackFuncs(stack)
	for _, f := range funcs {
		for _, w := range kitWrappers {
			if strings.HasPrefix(f, w) {
				return true
			}
		}
		if strings.HasPrefix(f, "os/signal.") {
			return true
		}
	}
	for _, f := range funcs {
		if !strings.HasPrefix(f, "runtime.") {
			return strings.HasPrefix(f, "testing.")
		}
	}
	return true // only runtime frames
}

// stackFuncs returns the function names of a goroutine's frames, innermost
// first, without the "created by" line.
func stackFuncs(stack string) []string {
	lines := strings.Split(stack, "\n")
	var funcs []string
	for _, l := range lines[1:] { // lines[0] is the "goroutine N [...]:" header
		if l == "" || strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "created by ") {
			continue
		}
		if strings.HasPrefix(l, "...") { // "...additional frames elided..."
			continue
		}
		name := l
		if i := strings.LastIndexByte(name, '('); i > 0 {
			name = name[:i]
		}
		funcs = append(funcs, name)
	}
	return funcs
}

// liveGoroutines parses runtime.Stack of all goroutines.
func liveGoroutines() goroutineSet {
	set := goroutineSet{}
	for _, g := range bytes.Split(allStacks(), []byte("\n\n")) {
		if id, ok := goroutineID(g); ok {
			set[id] = string(g)
		}
	}
	return set
}

// allStacks returns runtime.Stack(buf, true), growing buf until it fits.
func allStacks() []byte {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

// goroutineID reads N from the header "goroutine N [state]:".
func goroutineID(g []byte) (uint64, bool) {
	rest, ok := bytes.CutPrefix(bytes.TrimLeft(g, "\n"), []byte("goroutine "))
	if !ok {
		return 0, false
	}
	num, _, ok := bytes.Cut(rest, []byte(" "))
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseUint(string(num), 10, 64)
	return id, err == nil
}

// cutStacks joins stacks for a failure message, within a bound.
func cutStacks(stacks []string) string {
	const limit = 32 << 10
	s := strings.Join(stacks, "\n\n")
	if len(s) > limit {
		return s[:limit] + "\n... (cut)"
	}
	return s
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
