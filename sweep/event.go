package sweep

import (
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/sweep/ledger"
)

// EventKind names what an Event reports.
type EventKind string

// The events of a sweep, in the order a run meets them.
const (
	// EventSweepStarted: the tasks were checked; Progress.Total is known.
	EventSweepStarted EventKind = "sweep_started"
	// EventRunStarted and EventRunResumed: a run starts, or continues
	// from its log.
	EventRunStarted EventKind = "run_started"
	EventRunResumed EventKind = "run_resumed"
	// EventRunFinished: a run finished (StopReason, Totals), in this
	// invocation or before it.
	EventRunFinished EventKind = "run_finished"
	// EventRunScored: a finished run's scores were written (Scores).
	EventRunScored EventKind = "run_scored"
	// EventScoreFailed: a scorer could not score the run (Error).
	EventScoreFailed EventKind = "score_failed"
	// EventRetryScheduled: the run's stop reason is retried; the next
	// attempt (Next) starts after Delay.
	EventRetryScheduled EventKind = "retry_scheduled"
	// EventRunHeld: another live process holds the run's lease; the sweep
	// leaves the run to it.
	EventRunHeld EventKind = "run_held"
	// EventRunSuspended: the run waits at a gate (an approval, a
	// delivery).
	EventRunSuspended EventKind = "run_suspended"
	// EventRunStopped: the run stopped at a step boundary on the sweep's
	// stop request; it is resumable.
	EventRunStopped EventKind = "run_stopped"
	// EventRunFailed: the run returned an error (Error): a seam's error, a
	// store failure, a refused configuration. It is unfinished.
	EventRunFailed EventKind = "run_failed"
	// EventTaskChanged: the task file's task of this id is not the one the
	// coordinate's runs were given; the sweep leaves the coordinate alone.
	EventTaskChanged EventKind = "task_changed"
	// EventRateLimited: a provider answered 429; its calls pause for
	// Delay.
	EventRateLimited EventKind = "rate_limited"
	// EventProgress: the counts, now and then.
	EventProgress EventKind = "progress"
	// EventSweepFinished: nothing is left to do in this invocation
	// (Progress holds the final counts).
	EventSweepFinished EventKind = "sweep_finished"
)

// Event is one fact of a sweep's progress, for progress displays and
// --json output. Only the fields of its kind are set.
type Event struct {
	Kind EventKind `json:"event"`
	// At is when, by the sweep's clock: for people.
	At         time.Time           `json:"at"`
	RunID      string              `json:"run_id,omitempty"`
	Agent      string              `json:"agent,omitempty"`
	Task       string              `json:"task,omitempty"`
	Epoch      int                 `json:"epoch,omitempty"`
	Attempt    int                 `json:"attempt,omitempty"`
	StopReason polyloop.StopReason `json:"stop_reason,omitempty"`
	Totals     *polyloop.Totals    `json:"totals,omitempty"`
	Scores     []ledger.Score      `json:"scores,omitempty"`
	Next       string              `json:"next_run_id,omitempty"`
	Delay      time.Duration       `json:"delay_ns,omitempty"`
	Provider   string              `json:"provider,omitempty"`
	Error      string              `json:"error,omitempty"`
	Progress   *Progress           `json:"progress,omitempty"`
}

// Progress are the counts of a sweep's outcomes (one per agent, task and
// epoch) and of its runs (attempts included).
type Progress struct {
	// Total counts the outcomes: agents × tasks × epochs.
	Total int `json:"total"`
	// Done counts the outcomes settled: the last attempt finished with a
	// stop reason not retried, or retried but out of attempts. Done of
	// them were settled before this invocation started, Skipped of them.
	Done    int `json:"done"`
	Skipped int `json:"skipped"`
	// Running counts the runs under way; Waiting the retries waiting
	// for their pause; Queued the outcomes not started in this
	// invocation yet.
	Running int `json:"running"`
	Waiting int `json:"waiting"`
	Queued  int `json:"queued"`
	// Held, Suspended, Stopped, Failed and Changed count the outcomes this
	// invocation leaves unsettled: held by another process, waiting at a
	// gate, stopped on request, failed with an error, or whose task
	// changed.
	Held      int `json:"held"`
	Suspended int `json:"suspended"`
	Stopped   int `json:"stopped"`
	Failed    int `json:"failed"`
	Changed   int `json:"task_changed"`
	// StopReasons counts the settled outcomes by stop reason.
	StopReasons map[polyloop.StopReason]int `json:"stop_reasons"`
	// Runs counts the finished runs known (attempts included), and Tokens
	// and CostUSD sum their totals; TokensUnknown and CostUnknown say that
	// a sum is a lower bound (see polyloop.Totals).
	Runs          int     `json:"runs"`
	Tokens        int64   `json:"tokens"`
	TokensUnknown bool    `json:"tokens_unknown,omitempty"`
	CostUSD       float64 `json:"cost_usd"`
	CostUnknown   bool    `json:"cost_unknown,omitempty"`
	// ScoreFailures counts the runs a scorer could not score.
	ScoreFailures int `json:"score_failures"`
	// Elapsed is the time since this invocation started; ETA the time
	// left at the pace of the outcomes it settled (0: unknown).
	Elapsed time.Duration `json:"elapsed_ns"`
	ETA     time.Duration `json:"eta_ns"`
}

// Complete reports whether every outcome is settled.
func (p *Progress) Complete() bool { return p.Total > 0 && p.Done == p.Total }
