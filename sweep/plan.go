package sweep

import (
	"github.com/polyloop/polyloop/sweep/ledger"
)

// step is what the sweep does next at one coordinate.
type step int

const (
	// stepStart starts a run: the entry's run has no record yet.
	stepStart step = iota
	// stepResume continues the entry's unfinished run.
	stepResume
	// stepScore scores the entry's finished run (a scorer's score is
	// missing or stale).
	stepScore
	// stepDone: the coordinate is settled and scored.
	stepDone
	// stepChanged: the task is not the one the coordinate's runs were
	// given; nothing is done.
	stepChanged
)

func (s step) String() string {
	return [...]string{"start", "resume", "score", "done", "task changed"}[s]
}

// decision is what plan decided for one coordinate.
type decision struct {
	step  step
	state ledger.State
	// add: the entry is new, and is recorded before its run starts.
	add bool
}

// plan decides what to do at a coordinate from the states of its attempts
// (ordered by attempt), given the entry its first attempt has. It is a
// pure function of the ledger's view:
//   - no attempt: start the first (a new entry);
//   - the last attempt's task is another: nothing (task changed; walk
//     also leaves alone every coordinate of a task changed elsewhere);
//   - its run has no record: start it; unfinished: resume it;
//   - finished with a stop reason retried and attempts left: start the
//     next attempt (a new entry);
//   - finished otherwise: score it when a scorer's score is missing or
//     stale (never a run whose stop reason is retried), else done.
func (s *Sweep) plan(first ledger.Entry, t Task, states []ledger.State) decision {
	if len(states) == 0 {
		return decision{step: stepStart, state: ledger.State{Entry: first}, add: true}
	}
	last := states[len(states)-1]
	switch {
	case last.TaskDigest != first.TaskDigest:
		return decision{step: stepChanged, state: last}
	case last.Run == nil:
		return decision{step: stepStart, state: last}
	case !last.Run.Finished:
		return decision{step: stepResume, state: last}
	case s.def.Retry.Retried(last.Run.StopReason) && last.Attempt < s.def.Retry.Attempts:
		return decision{step: stepStart, state: ledger.State{Entry: s.next(last.Entry)}, add: true}
	case s.needsScore(last, t):
		return decision{step: stepScore, state: last}
	}
	return decision{step: stepDone, state: last}
}

// needsScore reports whether a finished run lacks a current score of one
// of the sweep's scorers. A run whose stop reason is retried is never
// scored.
func (s *Sweep) needsScore(st ledger.State, t Task) bool {
	if st.Run == nil || !st.Run.Finished || s.def.Retry.Retried(st.Run.StopReason) {
		return false
	}
	for _, sc := range s.def.Scorers {
		if !scored(sc, st.Scores, t) {
			return true
		}
	}
	return false
}

// scored reports whether scores hold sc's current score of the task.
func scored(sc Scorer, scores []ledger.Score, t Task) bool {
	for _, have := range scores {
		if have.Scorer == sc.Name() && current(sc, have, t) {
			return true
		}
	}
	return false
}

type (
	ledgerEntry = ledger.Entry
	ledgerState = ledger.State
)

func stateOf(e ledger.Entry) ledger.State { return ledger.State{Entry: e} }

// groupByCoord groups states (ordered by coordinate, then attempt) by
// coordinate.
func groupByCoord(states []ledger.State) map[string][]ledger.State {
	out := map[string][]ledger.State{}
	for _, st := range states {
		out[st.Coord] = append(out[st.Coord], st)
	}
	return out
}
