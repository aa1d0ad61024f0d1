package sweepqueue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/funcexec"
	"github.com/polyloop/polyloop/pgstore"
	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/toolcallparser"
	"github.com/riverqueue/river/rivertype"
)

// fixture is a store and a queue in schemas of their own.
type fixture struct {
	dsn   string
	store *pgstore.Store
	q     *Queue
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dsn := os.Getenv("POLYLOOP_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("POLYLOOP_TEST_POSTGRES is not set")
	}
	b := make([]byte, 4)
	rand.Read(b)
	suffix := hex.EncodeToString(b)
	ctx := context.Background()
	st, err := pgstore.Open(ctx, dsn, &pgstore.Options{Schema: "sq_runs_" + suffix})
	if err != nil {
		t.Fatal(err)
	}
	q, err := Open(ctx, dsn, &Options{Schema: "sq_river_" + suffix})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		q.Close()
		st.Close()
	})
	return &fixture{dsn: dsn, store: st, q: q}
}

// stepModel answers a task "n" with steps calls of the tool "add"
// (each adds 1), then the number the last observation says; every call
// takes delay. fail, when set, makes the first call of the attempts it
// names fail (llm_error).
type stepModel struct {
	steps int
	delay time.Duration
	fail  func(attempt int) bool
	panic bool
	watch *callWatch // when set, sees every call
	// gate, when set, holds the calls after the second until it is closed.
	gate <-chan struct{}
}

// callWatch counts a model's calls per run and the calls of one run that
// overlapped another of the same run (two drivers).
type callWatch struct {
	mu       sync.Mutex
	inflight map[string]int
	calls    map[string]int
	overlaps int
}

func (w *callWatch) begin(runID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inflight == nil {
		w.inflight, w.calls = map[string]int{}, map[string]int{}
	}
	if w.inflight[runID] > 0 {
		w.overlaps++
	}
	w.inflight[runID]++
	w.calls[runID]++
}

func (w *callWatch) end(runID string) {
	w.mu.Lock()
	w.inflight[runID]--
	w.mu.Unlock()
}

func (w *callWatch) count(runID string) (calls, overlaps int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.calls[runID], w.overlaps
}

func (m *stepModel) Describe() polyloop.Component { return polyloop.Component{Name: "stepModel"} }

func (m *stepModel) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	if m.panic {
		panic("stepModel: injected panic")
	}
	if m.watch != nil {
		m.watch.begin(req.RunID)
		defer m.watch.end(req.RunID)
	}
	if m.gate != nil && req.Step > 2 {
		select {
		case <-ctx.Done():
			return polyloop.ModelReply{}, ctx.Err()
		case <-m.gate:
		}
	}
	if m.delay > 0 {
		select {
		case <-ctx.Done():
			return polyloop.ModelReply{}, ctx.Err()
		case <-time.After(m.delay):
		}
	}
	ref, err := sweep.ParseRunID(req.RunID)
	if err != nil {
		return polyloop.ModelReply{}, err
	}
	if req.Step == 1 && m.fail != nil && m.fail(ref.Attempt) {
		return polyloop.ModelReply{}, errors.New("injected model failure")
	}
	usage := polyloop.Usage{InputTokens: 10, OutputTokens: 5}
	last := req.Messages[len(req.Messages)-1].Content
	if req.Step <= m.steps {
		args, _ := json.Marshal(map[string]any{"n": json.Number(strings.TrimSpace(last))})
		return polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{{ID: fmt.Sprintf("c%d", req.Step), Name: "add", Args: args}}, Usage: usage, Attempts: 1}, nil
	}
	return polyloop.ModelReply{Text: last, Usage: usage, Attempts: 1}, nil
}

func adder() *funcexec.Executor {
	e := funcexec.New()
	funcexec.MustRegister(e, "add", "adds 1 to n", polyloop.ReplaySafe, func(_ context.Context, a struct {
		N int `json:"n"`
	}) (string, error) {
		return strconv.Itoa(a.N + 1), nil
	})
	return e
}

// newSweep is a sweep of tasks t1…tn (input i, target i+steps) run by
// one agent of model m.
func newSweep(t *testing.T, name string, n int, m *stepModel, retry sweep.RetryPolicy) *sweep.Sweep {
	t.Helper()
	return newScoredSweep(t, name, n, m, retry, sweep.Exact("exact", sweep.MatchOptions{}))
}

// newScoredSweep is newSweep with the given scorers.
func newScoredSweep(t *testing.T, name string, n int, m *stepModel, retry sweep.RetryPolicy, scorers ...sweep.Scorer) *sweep.Sweep {
	t.Helper()
	ex := adder()
	a := &sweep.Agent{
		Agent:    polyloop.Agent{Name: "adder", Limits: polyloop.Limits{MaxSteps: m.steps + 2}, Model: polyloop.ModelParams{Provider: "script", Model: "steps"}},
		Model:    m,
		Parser:   toolcallparser.New(toolcallparser.Options{Tools: ex.ToolSpecs()}),
		Executor: ex,
	}
	var tasks sweep.TaskList
	for i := 1; i <= n; i++ {
		tasks = append(tasks, sweep.Task{ID: fmt.Sprintf("t%d", i), Input: strconv.Itoa(i), Target: []string{strconv.Itoa(i + m.steps)}})
	}
	s, err := sweep.New(sweep.Definition{Name: name, Agents: []*sweep.Agent{a}, Tasks: tasks, Retry: retry, Scorers: scorers})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// events keeps a worker's events.
type events struct {
	mu  sync.Mutex
	all []Event
}

func (e *events) add(ev Event) {
	e.mu.Lock()
	e.all = append(e.all, ev)
	e.mu.Unlock()
}

func (e *events) list() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Event(nil), e.all...)
}

// startWorker starts a worker of the fixture's queue on sweep s (or on
// what opts.Resolve resolves).
func (f *fixture) startWorker(t *testing.T, s *sweep.Sweep, ev *events, opts WorkerOptions) *Worker {
	t.Helper()
	opts.Store = f.store
	if opts.Resolve == nil {
		opts.Resolve = func(_ context.Context, name string) (*sweep.Sweep, error) {
			if name != s.Name() {
				return nil, fmt.Errorf("no sweep %s", name)
			}
			return s, nil
		}
	}
	if ev != nil {
		opts.Events = ev.add
	}
	if opts.RetryPolicy == nil {
		opts.RetryPolicy = fixedRetry(20 * time.Millisecond)
	}
	w, err := f.q.NewWorker(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		w.Cancel(ctx)
	})
	return w
}

// waitSettled waits until the queue has no live job.
func (f *fixture) waitSettled(t *testing.T, within time.Duration) *Status {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		st, err := f.q.Status(context.Background(), StatusOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st.Pending() == 0 {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queue did not settle within %s: %v", within, st.States)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// jobRow is a job as River's table holds it.
type jobRow struct {
	state   string
	attempt int
	output  map[string]any
	errors  int
}

func (f *fixture) job(t *testing.T, runID string) jobRow {
	t.Helper()
	var r jobRow
	var out []byte
	err := f.q.pool.QueryRow(context.Background(), `SELECT state::text, attempt, metadata->'output', coalesce(array_length(errors, 1), 0)
		FROM `+f.q.table()+` WHERE args->>'run_id' = $1 ORDER BY id DESC LIMIT 1`, runID).Scan(&r.state, &r.attempt, &out, &r.errors)
	if err != nil {
		t.Fatalf("job of %s: %v", runID, err)
	}
	if out != nil {
		if err := json.Unmarshal(out, &r.output); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// fixedRetry retries after d.
type fixedRetry time.Duration

func (d fixedRetry) NextRetry(*rivertype.JobRow) time.Time { return time.Now().Add(time.Duration(d)) }
