package storetest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A KillPoint says where a crash child dies. Every kind but KillTimed is a
// point of the child's own execution, where it SIGKILLs itself: given the
// log it starts from, the child always dies in the same state, so a kill
// point replays exactly.
type KillPoint struct {
	Kind KillKind
	// N is the ordinal, from 1, of the child's Append or action; for
	// KillTimed, the delay in microseconds after the child is ready.
	N int
}

// KillKind is where a kill point lands.
type KillKind string

// The kill points.
const (
	KillBeforeAppend KillKind = "before-append" // before the nth Append is handed to the store
	// KillInFlight: inside the nth Append, after its records were handed
	// to the database and before its outcome is known (SQLite: inserted,
	// not committed; PostgreSQL: the batch sent, its result not read).
	KillInFlight    KillKind = "in-flight"
	KillAfterAppend KillKind = "after-append" // right after the nth Append was acknowledged
	KillInAction    KillKind = "in-action"    // inside the nth action execution, after its side effect
	// KillTimed: the parent SIGKILLs the child after a delay, landing
	// anywhere (inside the database client's own writes too); where it
	// lands depends on timing, so it does not replay exactly.
	KillTimed KillKind = "timed"
)

func (k KillPoint) String() string { return fmt.Sprintf("%s:%d", k.Kind, k.N) }

// Self reports whether the child kills itself (a replayable kill point).
func (k KillPoint) Self() bool { return k.Kind != KillTimed }

// ParseKillPoint parses "kind:n".
func ParseKillPoint(s string) (KillPoint, error) {
	kind, n, ok := strings.Cut(s, ":")
	v, err := strconv.Atoi(n)
	if !ok || err != nil || v < 1 {
		return KillPoint{}, fmt.Errorf("kill point %q: want kind:n with n ≥ 1", s)
	}
	switch k := KillKind(kind); k {
	case KillBeforeAppend, KillInFlight, KillAfterAppend, KillInAction, KillTimed:
		return KillPoint{Kind: k, N: v}, nil
	}
	return KillPoint{}, fmt.Errorf("kill point %q: unknown kind %q", s, kind)
}

// parseKillPoints parses a comma-separated list of kill points.
func parseKillPoints(s string) ([]KillPoint, error) {
	var out []KillPoint
	for _, f := range strings.Split(s, ",") {
		kp, err := ParseKillPoint(strings.TrimSpace(f))
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
func drawKillPoint(rng *rand.Rand, window time.Duration) KillPoint {
	appends := 2*crashSteps + 2 // RunStarted, two per acting step, the final step
	if rng.IntN(timedEvery) == 0 {
		return KillPoint{Kind: KillTimed, N: 1 + rng.IntN(int(window.Microseconds()))}
	}
	switch rng.IntN(4) {
	case 0:
		return KillPoint{Kind: KillBeforeAppend, N: 1 + rng.IntN(appends)}
	case 1:
		return KillPoint{Kind: KillInFlight, N: 1 + rng.IntN(appends)}
	case 2:
		return KillPoint{Kind: KillAfterAppend, N: 1 + rng.IntN(appends)}
	default:
		return KillPoint{Kind: KillInAction, N: 1 + rng.IntN(crashSteps)}
	}
}

// timedEvery: one kill point in timedEvery is timed.
const timedEvery = 6

// Die SIGKILLs this process: no deferred function, no flush, no Close runs.
func Die() {
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	time.Sleep(time.Minute) // the signal is already on its way
	os.Exit(4)
}
