package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/polyloop/polyloop/internal/dsn"
	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/sweepqueue"
	"github.com/spf13/cobra"
)

type workerFlags struct {
	queue                  string
	concurrency            int
	slice, timeout, rescue time.Duration
	held                   time.Duration
	failAttempts           int
	json                   bool
}

func newWorkerCmd(a *app) *cobra.Command {
	var f workerFlags
	c := &cobra.Command{
		Use:   "worker --queue postgres://…",
		Short: "Run the jobs of sweeps enqueued with polyloop sweep --queue",
		Long: `Take jobs from a sweep queue on PostgreSQL (polyloop sweep SWEEP.yaml --queue
DSN enqueues them) and run them, --concurrency at a time; any number of workers
on any number of machines may share one queue. Each job is "run or resume run X"
under the run's lease, for a slice of time (--slice) that ends at a step
boundary: an unfinished run goes back to the queue and is continued by whichever
worker takes it next. A worker rebuilds each sweep from the sweep file its
manifest names: the same files at the same paths on every machine.

A job whose run finished completes, with the result as its output; a run that
finished resume_state_unknown, or waits at a gate, is cancelled for a person; a
store failure is retried with backoff; a seam's error or a panic is retried and
cancelled at its --fail-attempts'th attempt; a run leased by another live
worker is left to it. polyloop workers shows the queue.

Progress goes to standard error, one line per execution (--json: one JSON
object per execution on standard output). The first SIGINT or SIGTERM stops
every run at its next step boundary and gives its job back to the queue
(available at once, no attempt used); a second one cancels at once.

Exit codes: 0 stopped by a signal at step boundaries; 2 an error; 130
cancelled at once by a second signal.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.worker(cmd.Context(), f) },
	}
	c.Flags().StringVar(&f.queue, "queue", "", queueFlag)
	c.Flags().IntVar(&f.concurrency, "concurrency", 4, "jobs at once")
	c.Flags().DurationVar(&f.slice, "slice", 30*time.Second, "how long one execution drives a run before its job goes back to the queue (at a step boundary)")
	c.Flags().DurationVar(&f.timeout, "job-timeout", 5*time.Minute, "an execution's context is cancelled after this (more than --slice plus the longest step)")
	c.Flags().DurationVar(&f.rescue, "rescue-after", 0, "a job running this long is retried by River's rescuer: a dead worker's (default --job-timeout + 1m)")
	c.Flags().DurationVar(&f.held, "held-delay", 10*time.Second, "when the run's lease is held by another live process, try again after this")
	c.Flags().IntVar(&f.failAttempts, "fail-attempts", 3, "a seam's error or a panic cancels the job at this attempt")
	c.Flags().BoolVar(&f.json, "json", false, "print one JSON object per execution on standard output")
	_ = c.MarkFlagRequired("queue")
	return c
}

// check refuses flags that would make a worker that cannot work.
func (f workerFlags) check() error {
	switch {
	case f.concurrency < 1:
		return fmt.Errorf("--concurrency %d: a worker runs at least 1 job at a time", f.concurrency)
	case f.failAttempts < 1:
		return fmt.Errorf("--fail-attempts %d: must be at least 1 (the attempt at which a seam's error cancels the job)", f.failAttempts)
	case f.slice <= 0:
		return fmt.Errorf("--slice %s: must be positive", f.slice)
	case f.timeout <= f.slice:
		return fmt.Errorf("--job-timeout %s must exceed --slice %s (by the longest step): a slice ends at a step boundary after --slice, and the job timeout would cancel it first", f.timeout, f.slice)
	case f.rescue != 0 && f.rescue <= f.timeout:
		return fmt.Errorf("--rescue-after %s must exceed --job-timeout %s: River's rescuer would retry jobs still within their timeout", f.rescue, f.timeout)
	case f.held <= 0:
		return fmt.Errorf("--held-delay %s: must be positive", f.held)
	}
	return nil
}

func (a *app) worker(parent context.Context, f workerFlags) error {
	if err := f.check(); err != nil {
		return err
	}
	throughputGC()
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	q, store, closeQueue, err := a.openQueue(ctx, f.queue)
	if err != nil {
		return err
	}
	defer closeQueue()
	var mu sync.Mutex
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	a.envPool = sweepEnvPool(f.concurrency)
	resolve := func(ctx context.Context, name string) (*sweep.Sweep, error) {
		s, c, err := resolveSweep(ctx, store, name, f.concurrency, a.envProvider)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		closers = append(closers, c)
		mu.Unlock()
		return s, nil
	}
	show := &workerDisplay{a: a, json: f.json}
	w, err := q.NewWorker(sweepqueue.WorkerOptions{Store: store, Resolve: resolve, Concurrency: f.concurrency,
		Slice: f.slice, JobTimeout: f.timeout, RescueAfter: f.rescue, HeldDelay: f.held, FailAttempts: f.failAttempts, Events: show.event})
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := w.Start(ctx); err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "worker %s: taking jobs from %s (schema %s), %d at a time; SIGINT or SIGTERM stops at step boundaries\n",
		w.ID(), dsn.Redact(f.queue), q.Schema(), f.concurrency)
	var sig os.Signal
	select {
	case sig = <-sigs:
	case <-w.Stopped():
		return fmt.Errorf("worker %s stopped on its own", w.ID())
	}
	fmt.Fprintf(a.stderr, "%s: stopping at the next step boundary; the jobs under way go back to the queue; %s again to cancel at once\n", signalName(sig), signalName(sig))
	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(context.Background()) }()
	select {
	case err := <-stopped:
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stderr, "worker %s stopped: %d executions\n", w.ID(), show.count())
		return nil
	case sig = <-sigs:
		fmt.Fprintf(a.stderr, "%s again: cancelling at once\n", signalName(sig))
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		_ = w.Cancel(cctx)
		return &exitErr{code: exitInterrupted}
	}
}

// workerDisplay prints a worker's executions.
type workerDisplay struct {
	a    *app
	json bool
	mu   sync.Mutex
	n    int
}

func (d *workerDisplay) event(ev sweepqueue.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n++
	if d.json {
		_ = writeJSONLine(d.a.machineOut(), workerEventJSON(ev))
		return
	}
	what := "took no step"
	switch {
	case ev.Started:
		what = "started"
	case ev.Resumed:
		what = "resumed"
	}
	fmt.Fprintf(d.a.stderr, "%s run %s (job %d, attempt %d): %s, %s → %s: %s\n", ev.At.Format("15:04:05"), ev.RunID, ev.JobID, ev.Attempt,
		what, ev.Elapsed.Round(time.Millisecond), ev.Verdict.Action, ev.Verdict.Reason)
}

func (d *workerDisplay) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}

type workerEventLine struct {
	Event      string `json:"event"`
	At         string `json:"at"`
	JobID      int64  `json:"job_id"`
	Sweep      string `json:"sweep"`
	RunID      string `json:"run_id"`
	Attempt    int    `json:"attempt"`
	Started    bool   `json:"started,omitempty"`
	Resumed    bool   `json:"resumed,omitempty"`
	StopReason string `json:"stop_reason,omitempty"`
	Action     string `json:"action"`
	Delay      string `json:"delay,omitempty"`
	Reason     string `json:"reason"`
	ElapsedMS  int64  `json:"elapsed_ms"`
}

func workerEventJSON(ev sweepqueue.Event) workerEventLine {
	l := workerEventLine{Event: "job", At: ev.At.UTC().Format(time.RFC3339Nano), JobID: ev.JobID, Sweep: ev.Sweep, RunID: ev.RunID,
		Attempt: ev.Attempt, Started: ev.Started, Resumed: ev.Resumed, StopReason: string(ev.StopReason), Action: ev.Verdict.Action.String(),
		Reason: ev.Verdict.Reason, ElapsedMS: ev.Elapsed.Milliseconds()}
	if ev.Verdict.Delay > 0 {
		l.Delay = ev.Verdict.Delay.String()
	}
	return l
}
