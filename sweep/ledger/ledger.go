// Package ledger holds what a store keeps of sweeps beside the run logs:
// each sweep's manifest, the entries that tie each run of a sweep to its
// coordinates (agent, task, epoch, attempt), and the runs' scores. It is the
// bottom of the sweep packages: the stores implement Ledger and import only
// this package; package sweep drives it.
//
// Nothing here is a record of a run's log: a run's log ends at RunFinished,
// and a score is never appended after it. The ledger is the sweep's own
// table, keyed by run id.
package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/polyloop/polyloop"
)

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrNotFound: no sweep of that name is recorded.
	ErrNotFound = errors.New("ledger: no such sweep")
	// ErrConflict: an entry's run id is recorded with other fields (another
	// task, another coordinate): two definitions claim one run.
	ErrConflict = errors.New("ledger: the run is recorded with other fields")
)

// Ledger is the sweep side of a store. It is safe for concurrent use, and
// several processes (on several machines, for a shared database) may use
// one ledger at once.
//
// Contract:
//   - Every method that writes is atomic: all it was given is recorded, or
//     none of it, even if the process dies in the middle; when it returns
//     nil, what it wrote survives a crash (it is as durable as the store's
//     Append).
//   - A method given no values does nothing and returns nil.
//   - Reads see everything written before they started, by any process.
//   - Every error other than ErrNotFound and ErrConflict is a store
//     failure; a context that is done gives an error wrapping ctx.Err().
//   - Slices passed in are not kept; slices returned belong to the caller.
type Ledger interface {
	// PutSweep records a sweep's manifest, replacing the one recorded
	// under the same name.
	PutSweep(ctx context.Context, s Sweep) error
	// Sweep returns the sweep recorded under name, or ErrNotFound.
	Sweep(ctx context.Context, name string) (Sweep, error)
	// Sweeps lists the recorded sweeps with their entries' counts, the
	// most recently put first.
	Sweeps(ctx context.Context) ([]Info, error)
	// AddEntries records entries. An entry whose run id is recorded with
	// equal fields is left as it is (adding it again is not an error); one
	// whose run id is recorded with other fields makes the call fail with
	// ErrConflict, writing nothing.
	AddEntries(ctx context.Context, entries []Entry) error
	// Coords returns every entry of the sweep at the given coordinates
	// (Entry.Coord), with its state, ordered by coordinate (byte order)
	// then attempt. Coordinates without entries are absent.
	Coords(ctx context.Context, sweep string, coords []string) ([]State, error)
	// Runs returns the entries of the given run ids, of any sweep, with
	// their states, ordered by run id. Run ids without an entry are absent.
	Runs(ctx context.Context, runIDs []string) ([]State, error)
	// Page returns at most limit entries of the sweep whose run ids come
	// after the run id after (byte order; "" for the first page), ordered by
	// run id, with their states. Fewer than limit means the last page.
	Page(ctx context.Context, sweep, after string, limit int) ([]State, error)
	// PutScores records scores, each replacing the score of its run and
	// scorer. A score with Error set records a scorer's failure: the reads
	// give it in State.Failed, never in State.Scores.
	PutScores(ctx context.Context, scores []Score) error
}

// Sweep is a sweep as recorded: its name and its manifest, which package
// sweep writes and reads (the agents and their hashes, the task file, the
// epochs, the retry policy, the scorers, and what it takes to rebuild the
// sweep elsewhere).
type Sweep struct {
	Name     string          `json:"name"`
	Manifest json.RawMessage `json:"manifest"`
	// UpdatedAt is when the manifest was put, by the writer's clock: for
	// people and for the order of Sweeps, never for logic.
	UpdatedAt time.Time `json:"updated_at"`
}

// Info is a recorded sweep with the counts of its entries.
type Info struct {
	Name string `json:"name"`
	// Runs counts the entries (attempts included); Tasks the distinct task
	// ids, Agents the distinct agent hashes, Epochs the largest epoch.
	Runs      int       `json:"runs"`
	Tasks     int       `json:"tasks"`
	Agents    int       `json:"agents"`
	Epochs    int       `json:"epochs"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Entry ties one run of a sweep to its coordinates. Every field is part of
// the entry's identity: AddEntries compares them all.
type Entry struct {
	RunID string `json:"run_id"`
	Sweep string `json:"sweep"`
	// Coord names the agent, task and epoch together: the run id without
	// its attempt. The attempts at one coordinate share it.
	Coord     string `json:"coord"`
	Agent     string `json:"agent"`
	AgentHash string `json:"agent_hash"`
	TaskID    string `json:"task_id"`
	// Epoch and Attempt count from 1.
	Epoch   int `json:"epoch"`
	Attempt int `json:"attempt"`
	// Previous is the run id of the attempt this one retries, "" for the
	// first attempt.
	Previous string `json:"previous,omitempty"`
	// Task is the task as the sweep's task file gave it (package sweep's
	// encoding: input, target, metadata), so that a process that has not
	// read the task file can run and score the entry.
	Task json.RawMessage `json:"task"`
	// TaskDigest identifies the task's input and metadata, which the run
	// is shown: a task file whose task of the same id changed is told apart.
	TaskDigest string `json:"task_digest"`
}

// Equal reports whether two entries have the same fields (Task compared as
// bytes).
func (e Entry) Equal(o Entry) bool {
	return e.RunID == o.RunID && e.Sweep == o.Sweep && e.Coord == o.Coord && e.Agent == o.Agent &&
		e.AgentHash == o.AgentHash && e.TaskID == o.TaskID && e.Epoch == o.Epoch && e.Attempt == o.Attempt &&
		e.Previous == o.Previous && string(e.Task) == string(o.Task) && e.TaskDigest == o.TaskDigest
}

// State is an entry with what the store knows of its run.
type State struct {
	Entry
	// Run is the run's summary, nil when the run has no record yet.
	Run *polyloop.RunSummary `json:"run,omitempty"`
	// Scores are the run's scores, ordered by scorer name.
	Scores []Score `json:"scores,omitempty"`
	// Failed are the scorers' failures (Score.Error set) of the run, ordered
	// by scorer name: what could not be scored, and why.
	Failed []Score `json:"failed,omitempty"`
}

// SplitScores parts a run's stored scores into the scores and the
// failures (Score.Error set), keeping their order: how a store fills
// State.Scores and State.Failed.
func SplitScores(all []Score) (scores, failed []Score) {
	for _, s := range all {
		if s.Error != "" {
			failed = append(failed, s)
		} else {
			scores = append(scores, s)
		}
	}
	return scores, failed
}

// Score is one scorer's score of one run.
type Score struct {
	RunID  string `json:"run_id"`
	Scorer string `json:"scorer"`
	// Version identifies the scorer's kind, implementation and
	// configuration: a score is current when its version is the scorer's.
	Version string `json:"version"`
	// Description says what the scorer checks, for people.
	Description string `json:"description"`
	// Value is the score, from 0 to 1 (1: correct).
	Value float64 `json:"value"`
	// Explanation says why, briefly (the extracted answer, the grader's
	// reasoning, the command's message).
	Explanation string `json:"explanation,omitempty"`
	// GraderRunID names the recorded run that graded the answer, for a
	// model-graded scorer.
	GraderRunID string `json:"grader_run_id,omitempty"`
	// TargetDigest identifies the target the run was scored against: a
	// changed target makes the score stale.
	TargetDigest string `json:"target_digest,omitempty"`
	// ScoredAt is when, by the scorer's clock: for people.
	ScoredAt time.Time `json:"scored_at"`
	// Error, when set, says why the scorer could not score the run (its
	// error, a command's standard error): the record of a failure, whose
	// Value means nothing. Package sweep bounds it (sweep.MaxScoreError).
	Error string `json:"error,omitempty"`
}
