package polyloop

import "time"

// LibraryVersion is recorded in every RunStarted record.
const LibraryVersion = "0.1.0"

// Runner runs agents. It is the type users touch: the seams are small
// interfaces, and everything they have in common — records, error wrapping,
// events, truncation, synthetic observations — happens here, once.
//
// A Runner may be used by many goroutines at once, for different runs, as
// long as its seams are safe for concurrent use. Seam calls happen in the
// caller's goroutine (sinks aside), so a panic in a seam reaches the caller.
type Runner struct {
	Model    ModelClient
	Parser   DecisionParser
	Executor ActionExecutor
	Store    Store
	Sinks    []EventSink
	// SinkPolicy bounds event delivery; the zero value takes the defaults.
	SinkPolicy SinkPolicy
	// Environments creates the environments of agents that ask for one
	// (Agent.Environment); its snapshots live in the provider's own
	// BlobStore. Nil: an agent with an environment is refused.
	Environments EnvProvider
	// Clock stamps records (for people, never for logic); nil: time.Now.
	Clock func() time.Time
}

// now reads the Runner's clock (Clock, or time.Now).
func (r *Runner) now() time.Time {
	if r.Clock != nil {
		return r.Clock()
	}
	return time.Now()
}

// SinkPolicy bounds event delivery (see EventSink).
type SinkPolicy struct {
	// MaxConsecutiveErrors disables a sink after that many errors in a row
	// (0: DefaultMaxConsecutiveErrors; negative: never).
	MaxConsecutiveErrors int
	// MaxPanics disables a sink after that many panics (0: 1; negative:
	// never).
	MaxPanics int
	// Timeout bounds one Emit call (0: DefaultSinkTimeout; negative: no
	// bound, and Emit runs synchronously). A call that outlives it counts as
	// an error and the loop goes on.
	Timeout time.Duration
}

// Defaults of SinkPolicy.
const (
	DefaultMaxConsecutiveErrors = 3
	DefaultSinkTimeout          = 5 * time.Second
)

// ResumeOptions change what Resume accepts.
type ResumeOptions struct {
	// AllowConfigChange lets Resume go on when the configuration's snapshot
	// differs from the stored one; the override is recorded in the log as a
	// ConfigOverride record naming the differing fields.
	AllowConfigChange bool
	// TakeOver takes the run's lease, and those of the children its
	// replayed action resumes, away from a live holder (see Leaser); the
	// take-over is recorded in the log.
	TakeOver bool
}
