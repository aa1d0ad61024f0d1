package sweepqueue

import (
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Kind is the River job kind of a sweep's run.
const Kind = "polyloop_sweep_run"

// QueueName is the River queue the jobs go to.
const QueueName = "polyloop_sweeps"

// MaxAttempts bounds the attempts of a job: a store failure
// (*polyloop.PersistenceError) is retried with River's backoff until then.
// Snoozes (a slice's end, a lease held elsewhere, a graceful stop) use
// none.
const MaxAttempts = 25

// RunArgs is a job: run or resume the run RunID of the sweep Sweep. The
// worker rebuilds the sweep from its name (WorkerOptions.Resolve), so the
// job holds no configuration.
type RunArgs struct {
	Sweep string `json:"sweep"`
	RunID string `json:"run_id" river:"unique"`
}

// Kind is the job kind.
func (RunArgs) Kind() string { return Kind }

// liveStates are the states in which a job of a run excludes another:
// every state but the final ones, so that a run whose job completed, was
// cancelled or discarded can be enqueued again.
var liveStates = []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
	rivertype.JobStateRunning, rivertype.JobStateScheduled,
}

// insertOpts are the options of every job; at, when not zero, schedules it.
func insertOpts(at time.Time) *river.InsertOpts {
	return &river.InsertOpts{Queue: QueueName, MaxAttempts: MaxAttempts, ScheduledAt: at,
		UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: liveStates}}
}
