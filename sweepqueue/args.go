package sweepqueue

import (
	"context"
	"fmt"
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

// The priorities of the jobs (River takes the jobs of priority 1 first,
// then by scheduled time). A job whose run has started has
// PriorityStarted: a worker raises its job to it at the first execution,
// and River keeps it through its rescue of a dead worker's job, its
// retries and the snoozes at a slice's end; the job of a retried run's next
// attempt, and of a run already started when its sweep is enqueued again,
// are inserted with it. So a run taken back from a dead worker, or
// retried, goes ahead of the runs that have not started, instead of
// waiting behind every one of them (design 0043).
const (
	PriorityStarted = 1
	PriorityNew     = 2
)

// insertOpts are the options of every job; at, when not zero, schedules it.
func insertOpts(at time.Time, priority int) *river.InsertOpts {
	return &river.InsertOpts{Queue: QueueName, MaxAttempts: MaxAttempts, ScheduledAt: at, Priority: priority,
		UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: liveStates}}
}

// raise gives a job PriorityStarted, unless it has it: River hands it out
// running, and its rescue, retries and snoozes keep the priority.
func (q *Queue) raise(ctx context.Context, job *rivertype.JobRow) error {
	if job.Priority == PriorityStarted {
		return nil
	}
	_, err := q.pool.Exec(ctx, `UPDATE `+q.table()+` SET priority = $1 WHERE id = $2`, PriorityStarted, job.ID)
	if err != nil {
		return fmt.Errorf("sweepqueue: raise job %d to priority %d: %w", job.ID, PriorityStarted, err)
	}
	return nil
}
