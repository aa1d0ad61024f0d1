package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/funcexec"
	"github.com/polyloop/polyloop/pgstore"
	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/sweepqueue"
	"github.com/polyloop/polyloop/toolcallparser"
)

// The benchmark of issue 19: runs per minute of one sweep queue on one
// PostgreSQL with 1, 2 and 4 worker processes (this test binary as
// polyloop worker, benchConcurrency jobs each). Each run is benchSteps
// steps of a scripted model that takes benchLatency per call (a
// replay-safe noop action each) and a final answer, so that the figure
// measures the runtime, not a model. The workers start and announce
// themselves before the clock starts; the clock runs from the enqueue of
// benchRuns runs to the last job's completion. docs/performance.md has
// the method and the figures.

const (
	benchRuns        = 480
	benchSteps       = 4
	benchLatency     = 50 * time.Millisecond
	benchConcurrency = 8
	benchChildEnv    = "POLYLOOP_BENCH_WORKER"
)

// benchFlagsEnv holds the worker flags of a benchmark's worker process
// besides --queue and --concurrency, separated by spaces.
const benchFlagsEnv = "POLYLOOP_BENCH_WORKER_FLAGS"

func init() {
	if dsn := os.Getenv(benchChildEnv); dsn != "" {
		resolveSweep = func(_ context.Context, _ sweep.Store, name string, _ int, _ func(string) (polyloop.EnvProvider, error)) (*sweep.Sweep, func(), error) {
			s, err := benchSweepNamed(name)
			return s, func() {}, err
		}
		args := append([]string{"worker", "--queue", dsn, "--concurrency", strconv.Itoa(benchConcurrency)}, strings.Fields(os.Getenv(benchFlagsEnv))...)
		os.Exit(execute(args, nil, os.Stdout, os.Stderr))
	}
}

// benchModel calls noop steps times (benchSteps when zero), then answers;
// every call takes benchLatency.
type benchModel struct{ steps int }

func (benchModel) Describe() polyloop.Component { return polyloop.Component{Name: "benchModel"} }

func (m benchModel) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	t := time.NewTimer(benchLatency)
	select {
	case <-ctx.Done():
		t.Stop()
		return polyloop.ModelReply{}, ctx.Err()
	case <-t.C:
	}
	usage := polyloop.Usage{InputTokens: 10, OutputTokens: 5}
	if req.Step <= cmp.Or(m.steps, benchSteps) {
		args, _ := json.Marshal(map[string]int{"i": req.Step})
		return polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{{ID: "c" + strconv.Itoa(req.Step), Name: "noop", Args: args}}, Usage: usage, Attempts: 1}, nil
	}
	return polyloop.ModelReply{Text: "done", Usage: usage, Attempts: 1}, nil
}

// benchSweepNamed is the sweep a benchmark's worker resolves: the
// rescue benchmark's when name starts with "rescue", else benchSweep.
func benchSweepNamed(name string) (*sweep.Sweep, error) {
	if strings.HasPrefix(name, "rescue") {
		return benchSweepOf(name, rescueRuns, rescueSteps)
	}
	return benchSweep(name)
}

// benchSweep is the benchmark's sweep of benchRuns tasks, named name.
func benchSweep(name string) (*sweep.Sweep, error) { return benchSweepOf(name, benchRuns, benchSteps) }

// benchSweepOf is a sweep named name of runs tasks, each run steps noop
// actions and an answer.
func benchSweepOf(name string, runs, steps int) (*sweep.Sweep, error) {
	ex := funcexec.New()
	funcexec.MustRegister(ex, "noop", "does nothing", polyloop.ReplaySafe, func(_ context.Context, a struct {
		I int `json:"i"`
	}) (string, error) {
		return "ok " + strconv.Itoa(a.I), nil
	})
	agent := &sweep.Agent{
		Agent:    polyloop.Agent{Name: "bench", Limits: polyloop.Limits{MaxSteps: steps + 2}, Model: polyloop.ModelParams{Provider: "script", Model: "bench"}},
		Model:    benchModel{steps: steps},
		Parser:   toolcallparser.New(toolcallparser.Options{Tools: ex.ToolSpecs()}),
		Executor: ex,
	}
	var tasks sweep.TaskList
	for i := 1; i <= runs; i++ {
		tasks = append(tasks, sweep.Task{ID: "t" + strconv.Itoa(i), Input: strconv.Itoa(i)})
	}
	return sweep.New(sweep.Definition{Name: name, Agents: []*sweep.Agent{agent}, Tasks: tasks})
}

func BenchmarkWorkers(b *testing.B) {
	b.Run("no-queue", benchNoQueue)
	for _, n := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("processes=%d", n), func(b *testing.B) { benchWorkers(b, n) })
	}
}

// benchQueue is a database of the benchmark's own, its store and its
// queue, closed when the benchmark ends.
func benchQueue(b *testing.B) (string, *pgstore.Store, *sweepqueue.Queue) {
	dsn := fleetDatabase(b)
	ctx := context.Background()
	store, err := pgstore.Open(ctx, dsn, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	q, err := sweepqueue.Open(ctx, dsn, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { q.Close() })
	return dsn, store, q
}

// startWorkers starts n worker processes of the queue at dsn, with env
// added, and waits until each takes jobs.
func startWorkers(b *testing.B, dsn string, n int, env ...string) []*fleetChild {
	var children []*fleetChild
	for range n {
		children = append(children, startChild(b, append([]string{benchChildEnv + "=" + dsn}, env...)...))
	}
	for _, c := range children {
		for deadline := time.Now().Add(20 * time.Second); !strings.Contains(c.out.String(), "taking jobs"); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatalf("a worker did not start:\n%s", c.out.String())
			}
		}
	}
	return children
}

func benchWorkers(b *testing.B, processes int) {
	dsn, store, q := benchQueue(b)
	ctx := context.Background()
	children := startWorkers(b, dsn, processes)
	var elapsed time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		s, err := benchSweep(fmt.Sprintf("bench%d", i))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if res, err := q.Enqueue(ctx, s, store); err != nil || res.Inserted != benchRuns {
			b.Fatalf("Enqueue = %+v, %v", res, err)
		}
		for ; ; time.Sleep(10 * time.Millisecond) {
			st, err := q.Status(ctx, sweepqueue.StatusOptions{Sweep: s.Name()})
			if err != nil {
				b.Fatal(err)
			}
			if st.Pending() == 0 {
				if st.States["completed"] != benchRuns {
					b.Fatalf("states %v", st.States)
				}
				break
			}
		}
		elapsed += time.Since(start)
	}
	b.StopTimer()
	runsPerMin := float64(benchRuns*b.N) / elapsed.Minutes()
	// The latency-bound ideal: every run takes benchSteps+1 model calls,
	// processes × benchConcurrency at a time.
	ideal := float64(processes*benchConcurrency) / ((benchSteps + 1) * benchLatency).Minutes()
	b.ReportMetric(runsPerMin, "runs/min")
	b.ReportMetric(runsPerMin/ideal, "of-ideal")
	b.ReportMetric(0, "ns/op")
	// The mean execution of a job, as the workers print it: what the run
	// took, apart from what the queue adds around it.
	var sum time.Duration
	n := 0
	for _, c := range children {
		c.cmd.Process.Signal(os.Interrupt)
		<-c.done
		for _, m := range executionTime.FindAllStringSubmatch(c.out.String(), -1) {
			d, _ := time.ParseDuration(m[1])
			sum += d
			n++
		}
	}
	if n > 0 {
		b.ReportMetric(float64(sum.Milliseconds())/float64(n), "ms/execution")
	}
}

var executionTime = regexp.MustCompile(`\): started, ([0-9.]+m?s) →`)

// benchNoQueue is the baseline: the same sweep run by sweep.Run in this
// process, benchConcurrency at a time, on the same kind of store.
func benchNoQueue(b *testing.B) {
	dsn := fleetDatabase(b)
	ctx := context.Background()
	store, err := pgstore.Open(ctx, dsn, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	var elapsed time.Duration
	for i := range b.N {
		s, err := benchSweep(fmt.Sprintf("bench%d", i))
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		res, err := s.Run(ctx, sweep.RunOptions{Store: store, Concurrency: benchConcurrency})
		if err != nil || res.Progress.Done != benchRuns {
			b.Fatalf("Run: %+v, %v", res, err)
		}
		elapsed += time.Since(start)
	}
	runsPerMin := float64(benchRuns*b.N) / elapsed.Minutes()
	ideal := float64(benchConcurrency) / ((benchSteps + 1) * benchLatency).Minutes()
	b.ReportMetric(runsPerMin, "runs/min")
	b.ReportMetric(runsPerMin/ideal, "of-ideal")
	b.ReportMetric(0, "ns/op")
}
