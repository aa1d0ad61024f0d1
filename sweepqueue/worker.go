package sweepqueue

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime/debug"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/sweep"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// WorkerOptions configure a Worker.
type WorkerOptions struct {
	// Store holds the runs and the ledger: a store every worker reaches
	// (pgstore on the queue's database). Required.
	Store sweep.Store
	// Resolve builds the sweep a job names. Required. It is called once per
	// sweep name and its answer kept (an error is not kept); a job whose run
	// the kept sweep does not know (an agent changed and the sweep was
	// enqueued again) makes the worker call it again. Its error cancels the
	// job at once (*ResolveError), unless the error is a
	// *polyloop.PersistenceError: then the job is retried.
	Resolve func(ctx context.Context, name string) (*sweep.Sweep, error)
	// Concurrency is how many jobs run at once (default 4).
	Concurrency int
	// Slice bounds one execution of a run (default 30s): the run is asked
	// to stop at its first step boundary after it, and its job snoozes to be
	// continued. The slice never cuts a step; only JobTimeout does.
	Slice time.Duration
	// JobTimeout cancels an execution that outlives it (default 5m; it
	// must exceed Slice plus the longest step), and RescueAfter is when
	// River's rescuer makes a running job retryable (default JobTimeout +
	// 1m): a worker that died. A rescue of a job whose worker is alive is
	// safe: the run's lease refuses the second execution.
	JobTimeout, RescueAfter time.Duration
	// HeldDelay is the snooze of a job whose run is leased elsewhere
	// (default 10s).
	HeldDelay time.Duration
	// FailAttempts is the attempt at which a seam's error, a panic or a
	// scorer that could not score cancels the job (default 3).
	FailAttempts int
	// RetryPolicy spaces the attempts of a failed job (nil: River's
	// default, attempt⁴ seconds with jitter).
	RetryPolicy river.ClientRetryPolicy
	// ID names the worker in the queue (River's client id); default
	// host-pid. It must be unique among live workers.
	ID string
	// Events, when set, receives an Event per execution, from the jobs'
	// goroutines; it must return quickly.
	Events func(Event)
}

// Event is one execution of a job, as a Worker reports it.
type Event struct {
	At      time.Time
	JobID   int64
	RunID   string
	Sweep   string
	Attempt int
	Verdict Verdict
	// Started and Resumed say whether the execution ran steps.
	Started, Resumed bool
	StopReason       polyloop.StopReason
	Elapsed          time.Duration
}

// Output is the output a completed job records (River's job output).
type Output struct {
	RunID      string              `json:"run_id"`
	StopReason polyloop.StopReason `json:"stop_reason"`
	Records    int64               `json:"records"`
	Totals     polyloop.Totals     `json:"totals"`
	Scores     map[string]float64  `json:"scores,omitempty"`
	Next       string              `json:"next,omitempty"`
}

// Worker runs a queue's jobs.
type Worker struct {
	q      *Queue
	opts   WorkerOptions
	client *river.Client[pgx.Tx]

	stopping chan struct{} // closed by Stop: every run stops at a step boundary
	stopOnce sync.Once

	mu     sync.Mutex // held while a sweep is resolved
	sweeps map[string]*sweep.Sweep
}

// NewWorker makes a worker of the queue; Start starts it.
func (q *Queue) NewWorker(opts WorkerOptions) (*Worker, error) {
	if opts.Store == nil || opts.Resolve == nil {
		return nil, errors.New("sweepqueue: WorkerOptions needs Store and Resolve")
	}
	if q.client == nil {
		return nil, errReadOnly
	}
	opts = opts.withDefaults()
	if opts.RescueAfter <= opts.JobTimeout {
		return nil, fmt.Errorf("sweepqueue: RescueAfter (%s) must exceed JobTimeout (%s)", opts.RescueAfter, opts.JobTimeout)
	}
	w := &Worker{q: q, opts: opts, stopping: make(chan struct{}), sweeps: map[string]*sweep.Sweep{}}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &runWorker{w: w}); err != nil {
		return nil, fmt.Errorf("sweepqueue: %w", err)
	}
	var err error
	w.client, err = river.NewClient(riverpgxv5.New(q.pool), &river.Config{
		Schema: q.schema, ID: opts.ID, Workers: workers,
		Queues:     map[string]river.QueueConfig{QueueName: {MaxWorkers: opts.Concurrency}},
		JobTimeout: opts.JobTimeout, RescueStuckJobsAfter: opts.RescueAfter, MaxAttempts: MaxAttempts,
		RetryPolicy: opts.RetryPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("sweepqueue: %w", err)
	}
	return w, nil
}

var idUnsafe = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

func (o WorkerOptions) withDefaults() WorkerOptions {
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.Slice <= 0 {
		o.Slice = 30 * time.Second
	}
	if o.JobTimeout <= 0 {
		o.JobTimeout = 5 * time.Minute
	}
	if o.RescueAfter <= 0 {
		o.RescueAfter = o.JobTimeout + time.Minute
	}
	if o.HeldDelay <= 0 {
		o.HeldDelay = 10 * time.Second
	}
	if o.FailAttempts <= 0 {
		o.FailAttempts = 3
	}
	if o.ID == "" {
		host, _ := os.Hostname()
		o.ID = fmt.Sprintf("%s-%d", idUnsafe.ReplaceAllString(host, "_"), os.Getpid())
	}
	return o
}

// ID is the worker's id in the queue.
func (w *Worker) ID() string { return w.opts.ID }

// Start starts taking jobs; it returns once the worker runs.
func (w *Worker) Start(ctx context.Context) error {
	return w.client.Start(ctx)
}

// Stop stops the worker gracefully: it takes no more jobs, every run under
// way stops at its next step boundary (the action in progress finishes and
// is recorded) and its job goes back to the queue, available at once and
// without using an attempt. Stop returns when every job has returned, or
// with ctx's error.
func (w *Worker) Stop(ctx context.Context) error {
	w.stopOnce.Do(func() { close(w.stopping) })
	return w.client.Stop(ctx)
}

// Cancel stops the worker at once: the runs' contexts are cancelled (what
// was under way has no recorded outcome) and their jobs are retried.
func (w *Worker) Cancel(ctx context.Context) error {
	w.stopOnce.Do(func() { close(w.stopping) })
	return w.client.StopAndCancel(ctx)
}

// Stopped is closed when the worker has stopped.
func (w *Worker) Stopped() <-chan struct{} { return w.client.Stopped() }

// sweep is the sweep of a name, resolved once: the jobs that need it
// first wait for one Resolve. A failed Resolve is a *ResolveError.
func (w *Worker) sweep(ctx context.Context, name string) (*sweep.Sweep, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s, ok := w.sweeps[name]; ok {
		return s, nil
	}
	s, err := w.opts.Resolve(ctx, name)
	if err != nil {
		return nil, &ResolveError{Sweep: name, Err: err}
	}
	w.sweeps[name] = s
	return s, nil
}

// forget drops the sweep kept for name if it still is s, so that the next
// job resolves the name again.
func (w *Worker) forget(name string, s *sweep.Sweep) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sweeps[name] == s {
		delete(w.sweeps, name)
	}
}

// ResolveError is a sweep a worker could not rebuild from its name
// (WorkerOptions.Resolve failed). Judge cancels its job at once, as
// retrying changes nothing — unless Err is or wraps a
// *polyloop.PersistenceError (the store could not be read), which is
// retried.
type ResolveError struct {
	Sweep string
	Err   error
}

func (e *ResolveError) Error() string {
	return fmt.Sprintf("sweepqueue: the sweep %s cannot be rebuilt: %v", e.Sweep, e.Err)
}

// Unwrap returns Resolve's error.
func (e *ResolveError) Unwrap() error { return e.Err }

// runWorker is the River worker of RunArgs.
type runWorker struct {
	river.WorkerDefaults[RunArgs]
	w *Worker
}

// Work raises the job to PriorityStarted, executes one slice of its run
// and maps its outcome (Judge). A failure to raise the job is retried
// without running the slice.
func (rw *runWorker) Work(ctx context.Context, job *river.Job[RunArgs]) error {
	w := rw.w
	start := time.Now()
	out, err := sweep.Outcome{}, w.q.raise(ctx, job.JobRow)
	v := Verdict{Action: Retry, Err: err, Reason: fmt.Sprint(err)}
	if err == nil {
		out, err = w.execute(ctx, job.Args)
		v = Judge(out, err, Policy{Attempt: job.Attempt, FailAttempts: w.opts.FailAttempts, HeldDelay: w.opts.HeldDelay})
	}
	ret := w.apply(ctx, job, out, &v)
	if w.opts.Events != nil {
		ev := Event{At: time.Now(), JobID: job.ID, RunID: job.Args.RunID, Sweep: job.Args.Sweep, Attempt: job.Attempt, Verdict: v,
			Elapsed: time.Since(start)}
		if !errors.Is(err, polyloop.ErrLeaseHeld) && !errors.Is(err, polyloop.ErrRunNotStarted) {
			ev.Started, ev.Resumed = out.Started, out.Resumed
		}
		if out.Result != nil {
			ev.StopReason = out.Result.StopReason
		}
		w.opts.Events(ev)
	}
	return ret
}

// execute runs or resumes the run until it finishes or the slice ends; a
// panic is returned as a *PanicError. A run the kept sweep does not know
// (sweep.ErrUnknownRun: the sweep was enqueued again since, with a changed
// agent) makes the worker resolve the sweep once more and try again with
// the new one.
func (w *Worker) execute(ctx context.Context, args RunArgs) (out sweep.Outcome, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	s, err := w.sweep(ctx, args.Sweep)
	if err != nil {
		return sweep.Outcome{}, err
	}
	out, err = w.slice(ctx, s, args.RunID)
	if !errors.Is(err, sweep.ErrUnknownRun) {
		return out, err
	}
	w.forget(args.Sweep, s)
	again, rerr := w.sweep(ctx, args.Sweep)
	if rerr != nil {
		return out, rerr
	}
	if again == s { // resolved anew by another job meanwhile, to the same sweep
		return out, err
	}
	return w.slice(ctx, again, args.RunID)
}

// slice executes the run with sweep s until it finishes, the slice ends or
// the worker stops.
func (w *Worker) slice(ctx context.Context, s *sweep.Sweep, runID string) (sweep.Outcome, error) {
	stop := make(chan struct{})
	var once sync.Once
	end := func() { once.Do(func() { close(stop) }) }
	t := time.AfterFunc(w.opts.Slice, end)
	defer t.Stop()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-w.stopping:
			end()
		case <-done:
		}
	}()
	return s.Execute(polyloop.WithStopRequest(ctx, stop), w.opts.Store, runID)
}

// apply turns a verdict into the job's fate: the error Work returns, after
// the writes CompleteNext needs. A failing write makes the verdict a Retry.
func (w *Worker) apply(ctx context.Context, job *river.Job[RunArgs], out sweep.Outcome, v *Verdict) error {
	switch v.Action {
	case Snooze:
		return river.JobSnooze(v.Delay)
	case Retry:
		return v.Err
	case Cancel:
		return river.JobCancel(v.Err)
	}
	if err := river.RecordOutput(ctx, outputOf(out)); err != nil {
		*v = Verdict{Action: Retry, Err: err, Reason: err.Error()}
		return err
	}
	if v.Action == CompleteNext {
		if err := w.completeNext(ctx, job, out); err != nil {
			*v = Verdict{Action: Retry, Err: err, Reason: err.Error()}
			return err
		}
	}
	return nil
}

// completeNext inserts the job of the next attempt and completes this one
// in one transaction: a crash leaves both or neither (and then this job
// runs again, finds its run finished and records the same next attempt).
func (w *Worker) completeNext(ctx context.Context, job *river.Job[RunArgs], out sweep.Outcome) error {
	tx, err := w.q.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("sweepqueue: begin: %w", err)
	}
	defer tx.Rollback(ctx)
	next := RunArgs{Sweep: job.Args.Sweep, RunID: out.Next.RunID}
	if _, err := w.client.InsertTx(ctx, tx, next, insertOpts(time.Now().Add(out.Delay), PriorityStarted)); err != nil {
		return fmt.Errorf("sweepqueue: insert the job of %s: %w", next.RunID, err)
	}
	if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
		return fmt.Errorf("sweepqueue: complete job %d: %w", job.ID, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("sweepqueue: commit: %w", err)
	}
	return nil
}

func outputOf(out sweep.Outcome) Output {
	res := out.Result
	o := Output{RunID: out.Entry.RunID, StopReason: res.StopReason, Records: res.Records, Totals: res.Totals}
	for _, sc := range out.Scores {
		if o.Scores == nil {
			o.Scores = map[string]float64{}
		}
		o.Scores[sc.Scorer] = sc.Value
	}
	if out.Next != nil {
		o.Next = out.Next.RunID
	}
	return o
}
