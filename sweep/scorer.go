package sweep

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/sweep/ledger"
)

// Scorer scores the answer of a finished run against its task. The sweep
// calls it for every finished run whose stop reason it does not retry
// (Retry.On): a run that ended so is not the agent's answer but a failure
// of the service around it, and gets no score, even at its last attempt.
//
// A Scorer must be safe for concurrent use. Score returns an error only
// when it could not score (a command that crashed, a grading run that
// failed): the run then stays unscored, the sweep reports it, and a later
// sweep or polyloop score tries again. A wrong answer is a score of 0,
// never an error. Cancellation: when ctx is done, Score returns promptly
// with an error wrapping ctx.Err().
type Scorer interface {
	// Name names the scorer in its sweep, where it is unique; the scores
	// are stored under it.
	Name() string
	// Version identifies the scorer's kind, implementation and
	// configuration: a stored score of another version is stale, and the
	// sweep scores the run again.
	Version() string
	// Description says what the scorer checks, for people.
	Description() string
	Score(ctx context.Context, in ScoreInput) (ScoreResult, error)
}

// ScoreInput is what a scorer is given of a finished run.
type ScoreInput struct {
	RunID string
	Task  Task
	// StopReason is how the run finished; Answer is its final answer, set
	// when it completed with one.
	StopReason polyloop.StopReason
	Answer     string

	// store is where a model-graded scorer runs its grading runs: the
	// sweep's.
	store polyloop.Store
	// slots bound the command scorers running at once (the sweep's
	// MaxScorers); nil: no bound.
	slots chan struct{}
	// env is the run's environment, for a run that had one: a command
	// scorer runs inside it (envscore.go).
	env *runEnv
}

// ScoreResult is a scorer's score of one run.
type ScoreResult struct {
	// Value is from 0 to 1 (1: correct).
	Value float64
	// Explanation says why, briefly.
	Explanation string
	// GraderRunID names the run that graded the answer, if any.
	GraderRunID string
}

// ScoreError is a scorer that could not score a run: Err is the error its
// Score returned.
type ScoreError struct {
	RunID  string
	Scorer string
	Err    error
}

func (e *ScoreError) Error() string { return e.Err.Error() }

// Unwrap returns the scorer's error.
func (e *ScoreError) Unwrap() error { return e.Err }

// MaxExplanation bounds a score's explanation, in bytes.
const MaxExplanation = 2000

// MaxScoreError bounds the error recorded of a scorer that could not score
// a run (ledger.Score.Error), in bytes: its message, with the end of a
// command's standard error.
const MaxScoreError = 4000

// failureRecord is a scorer's failure as the ledger keeps it: the
// scorer's error, cut to MaxScoreError bytes, so that samples and show can
// say why a run is unscored. Its version is the scorer's, but a failure is
// never current (plan.go reads only State.Scores): the next sweep scores
// the run again.
func failureRecord(sc Scorer, in ScoreInput, err error, now time.Time) ledger.Score {
	return ledger.Score{RunID: in.RunID, Scorer: sc.Name(), Version: sc.Version(), Description: sc.Description(),
		TargetDigest: in.Task.TargetDigest(), ScoredAt: now, Error: truncateText(err.Error(), MaxScoreError)}
}

// versionOf is a scorer's version: its kind and implementation version,
// and a digest of its configuration.
func versionOf(kind string, impl int, config any) string {
	b, err := json.Marshal(config)
	if err != nil {
		panic(fmt.Sprintf("sweep: scorer configuration %T: %v", config, err))
	}
	sum := sha256.Sum256(b)
	return fmt.Sprintf("%s/%d:%s", kind, impl, hex.EncodeToString(sum[:6]))
}

// noAnswer is the score of a run that finished without an answer.
func noAnswer(in ScoreInput) (ScoreResult, bool) {
	if in.StopReason == polyloop.StopCompleted {
		return ScoreResult{}, false
	}
	return ScoreResult{Value: 0, Explanation: fmt.Sprintf("no answer: the run finished %s", in.StopReason)}, true
}

// scoreRecord is a scorer's result as the ledger keeps it.
func scoreRecord(sc Scorer, in ScoreInput, r ScoreResult, now time.Time) ledger.Score {
	return ledger.Score{RunID: in.RunID, Scorer: sc.Name(), Version: sc.Version(), Description: sc.Description(),
		Value: r.Value, Explanation: truncateText(r.Explanation, MaxExplanation), GraderRunID: r.GraderRunID,
		TargetDigest: in.Task.TargetDigest(), ScoredAt: now}
}

// current reports whether a stored score is the scorer's score of the
// task as it is now.
func current(sc Scorer, s ledger.Score, t Task) bool {
	return s.Version == sc.Version() && s.TargetDigest == t.TargetDigest()
}

// truncateText cuts s to at most n bytes, on a UTF-8 boundary.
func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
