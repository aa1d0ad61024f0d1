package sqlitestore_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A killPoint says where a crash child dies. Every kind but killTimed is
// a point of the child's own execution, where it SIGKILLs itself: given the
// log it starts from, the child always dies in the same state, so a kill
// point replays exactly.
type killPoint struct {
	kind killKind
	// n is the ordinal, from 1, of the child's Append or action; for
	// killTimed, the delay in microseconds after the child is ready.
	n int
}

type killKind string

const (
	killBeforeAppend killKind = "before-append" // before the nth Append is handed to the store
	killInCommit     killKind = "in-commit"     // inside the nth Append's transaction: records inserted, not committed
	killAfterAppend  killKind = "after-append"  // right after the nth Append was acknowledged
	killInAction     killKind = "in-action"     // inside the nth action execution
	// killTimed: the parent SIGKILLs the child after a delay, landing
	// anywhere (inside SQLite's own writes too); where it lands depends on
	// timing, so it does not replay exactly.
	killTimed killKind = "timed"
)

func (k killPoint) String() string { return fmt.Sprintf("%s:%d", k.kind, k.n) }

// self reports whether the child kills itself (a replayable kill point).
func (k killPoint) self() bool { return k.kind != killTimed }

func parseKillPoint(s string) (killPoint, error) {
	kind, n, ok := strings.Cut(s, ":")
	v, err := strconv.Atoi(n)
	if !ok || err != nil || v < 1 {
		return killPoint{}, fmt.Errorf("kill point %q: want kind:n with n ≥ 1", s)
	}
	switch k := killKind(kind); k {
	case killBeforeAppend, killInCommit, killAfterAppend, killInAction, killTimed:
		return killPoint{kind: k, n: v}, nil
	}
	return killPoint{}, fmt.Errorf("kill point %q: unknown kind %q", s, kind)
}

// parseKillPoints parses a comma-separated list of kill points.
func parseKillPoints(s string) ([]killPoint, error) {
	var out []killPoint
	for _, f := range strings.Split(s, ",") {
		kp, err := parseKillPoint(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, kp)
	}
	return out, nil
}

// drawKillPoint draws a kill point for a child: one in timedEvery is timed
// (within window), the others are self-kills at an Append or an action a
// fresh run of the crash workload reaches.
func drawKillPoint(rng *rand.Rand, window time.Duration) killPoint {
	appends := 2*crashSteps + 2 // RunStarted, two per acting step, the final step
	if rng.IntN(timedEvery) == 0 {
		return killPoint{kind: killTimed, n: 1 + rng.IntN(int(window.Microseconds()))}
	}
	switch rng.IntN(4) {
	case 0:
		return killPoint{kind: killBeforeAppend, n: 1 + rng.IntN(appends)}
	case 1:
		return killPoint{kind: killInCommit, n: 1 + rng.IntN(appends)}
	case 2:
		return killPoint{kind: killAfterAppend, n: 1 + rng.IntN(appends)}
	default:
		return killPoint{kind: killInAction, n: 1 + rng.IntN(crashSteps)}
	}
}

// timedEvery: one kill point in timedEvery is timed.
const timedEvery = 6

// die SIGKILLs this process: no deferred function, no flush, no Close runs.
func die() {
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	time.Sleep(time.Minute) // the signal is already on its way
	os.Exit(4)
}
