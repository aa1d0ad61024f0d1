package sweep

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/sweep/ledger"
)

// ErrStopped is returned by Run when RunOptions.Stop was closed: every run
// under way stopped at its next step boundary, nothing else started, and
// running the sweep again continues it.
var ErrStopped = errors.New("sweep: stopped on request")

// RunOptions configure Run.
type RunOptions struct {
	// Store holds the runs and the ledger. Required.
	Store Store
	// Concurrency, when positive, replaces the definition's.
	Concurrency int
	// Stop, when closed, stops the sweep gracefully: no run starts any
	// more, the retries waiting are dropped, and every run under way stops
	// at its next step boundary (polyloop.WithStopRequest) — the action in
	// progress finishes and is recorded. Cancelling ctx instead stops the
	// runs at once (what was under way has no recorded outcome).
	Stop <-chan struct{}
	// Events, when set, receives every event, one call at a time, from the
	// sweep's goroutines; it must return quickly.
	Events func(Event)
	// ProgressEvery is how often an EventProgress is sent (default 1s).
	ProgressEvery time.Duration
}

// Result is what Run did.
type Result struct {
	Progress Progress
	// Errors are the errors of the runs that failed, the first
	// maxRunErrors of them.
	Errors []RunError
}

// RunError is a run that returned an error.
type RunError struct {
	RunID string
	Err   error
}

const maxRunErrors = 20

// chunkSize is how many coordinates the planner reads from the ledger at
// once.
const chunkSize = 128

// Run runs the sweep: every agent on every task for every epoch. It checks
// the tasks first (every problem reported at once, nothing run), records
// the sweep's manifest, then streams the tasks: for each coordinate it
// reads what the ledger and the store hold, and starts what is missing,
// resumes what is unfinished (a run held by another live process is left
// to it), retries as new attempts the runs whose stop reason the retry
// policy names, and scores what finished unscored — Concurrency runs at a
// time. Run again, it does only what is left. Memory stays flat in the
// number of tasks: tasks are read as they are needed and results are not
// kept.
//
// Errors: the tasks' problems (*TaskErrors); ErrStopped when Stop was
// closed; ctx's error when it was cancelled; a store failure of the ledger,
// a *PersistenceError of a run, or an agent the runner refuses
// (polyloop.ErrInvalidConfig): the sweep then stops, as on Stop. A run's
// other errors do not stop the sweep: the run is left unfinished and
// listed in Result.Errors. The Result is valid with every error but the
// tasks'.
func (s *Sweep) Run(ctx context.Context, opts RunOptions) (*Result, error) {
	if opts.Store == nil {
		return nil, fmt.Errorf("%w: RunOptions.Store is nil", ErrInvalid)
	}
	n, err := s.def.Tasks.Check(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.record(ctx, opts.Store); err != nil {
		return nil, err
	}
	s.pruneEnvironments(ctx)
	sc := newScheduler(s, opts, n*len(s.def.Agents)*s.def.Epochs)
	s.mu.Lock()
	if s.observer != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("sweep: %s is already running in this process", s.def.Name)
	}
	s.observer = sc.event
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.observer = nil
		s.mu.Unlock()
	}()
	return sc.run(ctx)
}

// item is one coordinate's next step, for a worker.
type item struct {
	d decision
	t Task
}

// scheduler runs one invocation of a sweep.
type scheduler struct {
	s     *Sweep
	opts  RunOptions
	store Store
	start time.Time

	work    chan item
	retries chan item
	stop    chan struct{} // closed to stop gracefully
	once    sync.Once
	pending sync.WaitGroup // items created and not yet settled, and the producer

	mu      sync.Mutex
	p       Progress
	doneNow int
	errs    []RunError
	fatal   error
	timers  map[*time.Timer]struct{}
	stopped bool
	evMu    sync.Mutex // serializes Events
}

func newScheduler(s *Sweep, opts RunOptions, total int) *scheduler {
	if opts.Concurrency <= 0 {
		opts.Concurrency = s.def.Concurrency
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = time.Second
	}
	return &scheduler{s: s, opts: opts, store: opts.Store, start: time.Now(),
		work: make(chan item), retries: make(chan item), stop: make(chan struct{}),
		p: Progress{Total: total, StopReasons: map[polyloop.StopReason]int{}}, timers: map[*time.Timer]struct{}{}}
}

func (sc *scheduler) run(ctx context.Context) (*Result, error) {
	sc.event(Event{Kind: EventSweepStarted})
	ended := make(chan struct{})
	defer close(ended)
	go func() {
		select {
		case <-sc.opts.Stop:
			sc.halt(nil)
		case <-sc.stop:
		case <-ended:
		}
	}()
	runCtx := polyloop.WithStopRequest(ctx, sc.stop)
	quit := make(chan struct{})
	var workers sync.WaitGroup
	for range sc.opts.Concurrency {
		workers.Go(func() { sc.worker(runCtx, quit) })
	}
	ticker := time.NewTicker(sc.opts.ProgressEvery)
	defer ticker.Stop()
	tickDone := make(chan struct{})
	go func() {
		for {
			select {
			case <-ticker.C:
				sc.event(Event{Kind: EventProgress})
			case <-tickDone:
				return
			}
		}
	}()
	sc.pending.Add(1)
	go func() {
		defer sc.pending.Done()
		if err := sc.produce(ctx); err != nil {
			sc.halt(err)
		}
	}()
	sc.pending.Wait()
	close(quit)
	workers.Wait()
	close(tickDone)
	sc.event(Event{Kind: EventSweepFinished})
	return sc.result(ctx)
}

// result is the invocation's Result and error.
func (sc *scheduler) result(ctx context.Context) (*Result, error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	res := &Result{Progress: sc.snapshot(), Errors: sc.errs}
	switch {
	case sc.fatal != nil:
		return res, sc.fatal
	case ctx.Err() != nil:
		return res, ctx.Err()
	case sc.stopped:
		return res, ErrStopped
	}
	return res, nil
}

// halt stops the sweep gracefully; err, when set, is why (a store
// failure).
func (sc *scheduler) halt(err error) {
	sc.mu.Lock()
	if err != nil && sc.fatal == nil {
		sc.fatal = err
	}
	sc.stopped = true
	for t := range sc.timers {
		// A timer that already fired is left to its function, which
		// finds the sweep stopped.
		if t.Stop() {
			sc.p.Waiting--
			sc.pending.Done()
			delete(sc.timers, t)
		}
	}
	sc.mu.Unlock()
	sc.once.Do(func() { close(sc.stop) })
}

func (sc *scheduler) halted() bool {
	select {
	case <-sc.stop:
		return true
	default:
		return false
	}
}

// produce streams the tasks and hands each coordinate's next step to the
// workers.
func (sc *scheduler) produce(ctx context.Context) error {
	err := sc.s.walk(ctx, sc.store, func(it item, prior []ledger.State) error {
		if sc.halted() {
			return errHalted
		}
		sc.countPrior(prior)
		return sc.dispatch(ctx, it)
	})
	if errors.Is(err, errHalted) || (err != nil && ctx.Err() != nil) {
		return nil
	}
	return err
}

var errHalted = errors.New("sweep: halted")

// dispatch counts a settled coordinate or hands its step to a worker.
func (sc *scheduler) dispatch(ctx context.Context, it item) error {
	switch it.d.step {
	case stepDone:
		sc.settle(it.d.state.Run.StopReason, true)
		return nil
	case stepChanged:
		sc.count(func(p *Progress) { p.Changed++ })
		sc.event(Event{Kind: EventTaskChanged, RunID: it.d.state.RunID, Agent: it.d.state.Agent, Task: it.t.ID, Epoch: it.d.state.Epoch,
			Error: fmt.Sprintf("the task %q is not the one its runs were given (its input or metadata changed): rename the task to run it anew", it.t.ID)})
		return nil
	}
	sc.pending.Add(1)
	select {
	case sc.work <- it:
		return nil
	case <-sc.stop:
		sc.pending.Done()
		return errHalted
	case <-ctx.Done():
		sc.pending.Done()
		return ctx.Err()
	}
}

// worker runs items until quit is closed, retries first.
func (sc *scheduler) worker(ctx context.Context, quit <-chan struct{}) {
	for {
		var it item
		select {
		case it = <-sc.retries:
		default:
			select {
			case it = <-sc.retries:
			case it = <-sc.work:
			case <-quit:
				return
			}
		}
		sc.runItem(ctx, it)
	}
}

// runItem executes one step and accounts for its outcome.
func (sc *scheduler) runItem(ctx context.Context, it item) {
	defer sc.pending.Done()
	if sc.halted() && it.d.step != stepScore {
		return // left for the next invocation: queued
	}
	sc.count(func(p *Progress) { p.Running++ })
	out, err := sc.s.execute(ctx, sc.store, it.d.state, it.d.step)
	sc.count(func(p *Progress) { p.Running-- })
	e := it.d.state.Entry
	if err != nil {
		sc.failed(ctx, e, err)
		return
	}
	if out.Result.Suspended != nil {
		sc.count(func(p *Progress) { p.Suspended++ })
		sc.event(sc.s.runEvent(EventRunSuspended, e))
		return
	}
	sc.finished(e, out)
	if out.Next != nil {
		sc.retry(item{d: decision{step: stepStart, state: stateOf(*out.Next)}, t: it.t}, out.Delay)
		return
	}
	sc.settle(out.Result.StopReason, false)
}

// finished accounts for a finished run and its scores.
func (sc *scheduler) finished(e ledgerEntry, out Outcome) {
	res := out.Result
	if out.Started || out.Resumed {
		sc.count(func(p *Progress) { addTotals(p, res.Totals) })
		ev := sc.s.runEvent(EventRunFinished, e)
		ev.StopReason, ev.Totals = res.StopReason, &res.Totals
		sc.event(ev)
	}
	if len(out.Scores) > 0 {
		ev := sc.s.runEvent(EventRunScored, e)
		ev.Scores = out.Scores
		sc.event(ev)
	}
	for _, err := range out.ScoreErrors {
		sc.count(func(p *Progress) { p.ScoreFailures++ })
		ev := sc.s.runEvent(EventScoreFailed, e)
		ev.Error = err.Error()
		sc.event(ev)
	}
	if out.Next != nil {
		ev := sc.s.runEvent(EventRetryScheduled, e)
		ev.StopReason, ev.Next, ev.Delay = res.StopReason, out.Next.RunID, out.Delay
		sc.event(ev)
	}
}

// failed accounts for a run that returned an error.
func (sc *scheduler) failed(ctx context.Context, e ledgerEntry, err error) {
	var pe *polyloop.PersistenceError
	switch {
	case errors.Is(err, polyloop.ErrRunNotStarted) && (errors.Is(err, polyloop.ErrStopRequested) || ctx.Err() != nil):
		return // stopped before its first record: still queued
	case errors.Is(err, polyloop.ErrStopRequested), ctx.Err() != nil && errors.Is(err, ctx.Err()):
		sc.count(func(p *Progress) { p.Stopped++ })
		sc.event(sc.s.runEvent(EventRunStopped, e))
		return
	case errors.Is(err, polyloop.ErrLeaseHeld):
		sc.count(func(p *Progress) { p.Held++ })
		ev := sc.s.runEvent(EventRunHeld, e)
		ev.Error = err.Error()
		sc.event(ev)
		return
	case errors.As(err, &pe), errors.Is(err, polyloop.ErrInvalidConfig):
		// The store is shared by every run, and an agent refused once is
		// refused for every task: the sweep stops.
		sc.halt(fmt.Errorf("run %s: %w", e.RunID, err))
	}
	sc.mu.Lock()
	sc.p.Failed++
	if len(sc.errs) < maxRunErrors {
		sc.errs = append(sc.errs, RunError{RunID: e.RunID, Err: err})
	}
	sc.mu.Unlock()
	ev := sc.s.runEvent(EventRunFailed, e)
	ev.Error = err.Error()
	sc.event(ev)
}

// retry schedules the next attempt after delay.
func (sc *scheduler) retry(it item, delay time.Duration) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.stopped {
		return
	}
	sc.pending.Add(1)
	sc.p.Waiting++
	var t *time.Timer
	t = time.AfterFunc(delay, func() {
		sc.mu.Lock()
		_, live := sc.timers[t]
		delete(sc.timers, t)
		if live {
			sc.p.Waiting--
		}
		sc.mu.Unlock()
		if !live {
			return
		}
		select {
		case sc.retries <- it:
		case <-sc.stop:
			sc.pending.Done()
		}
	})
	sc.timers[t] = struct{}{}
}

// settle counts an outcome settled; before says it was so before this
// invocation.
func (sc *scheduler) settle(reason polyloop.StopReason, before bool) {
	sc.mu.Lock()
	sc.p.Done++
	sc.p.StopReasons[reason]++
	if before {
		sc.p.Skipped++
	} else {
		sc.doneNow++
	}
	sc.mu.Unlock()
}

// countPrior adds the totals of a coordinate's attempts that finished
// before this invocation.
func (sc *scheduler) countPrior(states []ledgerState) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for _, st := range states {
		if st.Run != nil && st.Run.Finished && st.Run.Totals != nil {
			addTotals(&sc.p, *st.Run.Totals)
		}
	}
}

func addTotals(p *Progress, t polyloop.Totals) {
	p.Runs++
	p.Tokens += t.Tokens()
	p.CostUSD += t.CostUSD
	p.TokensUnknown = p.TokensUnknown || t.TokensUnknown
	p.CostUnknown = p.CostUnknown || t.CostUnknown
}

func (sc *scheduler) count(f func(*Progress)) {
	sc.mu.Lock()
	f(&sc.p)
	sc.mu.Unlock()
}

// snapshot is the progress now; sc.mu is held.
func (sc *scheduler) snapshot() Progress {
	p := sc.p
	p.StopReasons = make(map[polyloop.StopReason]int, len(sc.p.StopReasons))
	for k, v := range sc.p.StopReasons {
		p.StopReasons[k] = v
	}
	p.Elapsed = time.Since(sc.start)
	left := p.Total - p.Done - p.Held - p.Suspended - p.Stopped - p.Failed - p.Changed
	p.Queued = max(0, left-p.Running-p.Waiting)
	if sc.doneNow > 0 && left > 0 {
		p.ETA = time.Duration(float64(p.Elapsed) / float64(sc.doneNow) * float64(left))
	}
	return p
}

// event sends an event with the time and, for progress events, the
// counts.
func (sc *scheduler) event(ev Event) {
	if sc.opts.Events == nil {
		return
	}
	ev.At = time.Now()
	if ev.Kind == EventProgress || ev.Kind == EventSweepStarted || ev.Kind == EventSweepFinished {
		sc.mu.Lock()
		p := sc.snapshot()
		sc.mu.Unlock()
		ev.Progress = &p
	}
	sc.evMu.Lock()
	defer sc.evMu.Unlock()
	sc.opts.Events(ev)
}
