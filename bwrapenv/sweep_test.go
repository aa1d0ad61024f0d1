//go:build linux

package bwrapenv_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/bwrapenv"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/shellexec"
	"github.com/polyloop/polyloop/snapshotstore"
	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/toolcallparser"
)

// counting wraps a provider and counts the environments that exist at
// once.
type counting struct {
	polyloop.EnvProvider
	mu        sync.Mutex
	live, max int
	created   int
}

type countedEnv struct {
	polyloop.Environment
	c    *counting
	once sync.Once
}

func (c *counting) Create(ctx context.Context, spec polyloop.EnvSpec) (polyloop.Environment, error) {
	e, err := c.EnvProvider.Create(ctx, spec)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.live++
	c.created++
	c.max = max(c.max, c.live)
	c.mu.Unlock()
	return &countedEnv{Environment: e, c: c}, nil
}

// Prune passes through to the sandbox's pruner.
func (c *counting) Prune(ctx context.Context, dryRun bool) ([]polyloop.EnvOrphan, error) {
	return c.EnvProvider.(polyloop.EnvPruner).Prune(ctx, dryRun)
}

func (e *countedEnv) Destroy(ctx context.Context) error {
	e.once.Do(func() {
		e.c.mu.Lock()
		e.c.live--
		e.c.mu.Unlock()
	})
	return e.Environment.Destroy(ctx)
}

// TestSweepEnvironments: an environment a killed driver left is pruned
// when the sweep starts; then a sweep of eight runs, four at once, at most two
// environments at once. Each run's action writes /work/mark, and /work/seen
// when it finds a mark already there (another run's file); the command
// scorer runs in the finished run's environment and scores 1 only when the
// mark is there, nothing was seen, and the file the task carried
// (metadata "file:/work/task.txt") is there. Accuracy 1 over every run: the
// runs never saw each other's files, each got its task's, and the scorer
// saw each run's.
func TestSweepEnvironments(t *testing.T) {
	images := testImages(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	killedSweep(t, dir) // an environment a killed driver left in dir/envs
	snaps, err := snapshotstore.OpenDir(filepath.Join(dir, "snapshots"))
	if err != nil {
		t.Fatal(err)
	}
	inner, err := bwrapenv.New(bwrapenv.Options{Images: images, StateDir: filepath.Join(dir, "envs"), Snapshots: snaps})
	if err != nil {
		t.Fatal(err)
	}
	p := &counting{EnvProvider: inner}
	ex, err := shellexec.New(shellexec.Options{InEnvironment: true, Dir: "/work", Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	agent := &sweep.Agent{
		Agent: polyloop.Agent{Name: "marker", Tools: ex.ToolSpecs(), Limits: polyloop.Limits{MaxSteps: 4},
			Environment: &polyloop.EnvSpec{Image: "busybox", WorkDir: "/work"}},
		Model: scriptmodel.New(
			scriptmodel.Call("c1", shellexec.ToolName, map[string]string{"command": "if [ -e /work/mark ]; then echo seen > /work/seen; fi; " +
				"cat /proc/sys/kernel/random/uuid > /work/mark; sleep 0.1; cat /work/mark"}),
			scriptmodel.Reply("marked")),
		Parser:       toolcallparser.New(toolcallparser.Options{}),
		Executor:     ex,
		Environments: p,
	}
	var tasks sweep.TaskList
	for i := range 8 {
		tasks = append(tasks, sweep.Task{ID: fmt.Sprint("t", i), Input: fmt.Sprint("mark ", i),
			Metadata: map[string]string{polyloop.TaskFilePrefix + "/work/task.txt": fmt.Sprint("task ", i)}})
	}
	scorer, err := sweep.Command("mark", sweep.CommandOptions{Args: []string{"sh", "-c", "test -s /work/mark && test ! -e /work/seen && grep -q '^task [0-9]$' /work/task.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sweep.New(sweep.Definition{Name: "envs", Agents: []*sweep.Agent{agent}, Tasks: tasks, Concurrency: 4,
		MaxEnvironments: 2, Scorers: []sweep.Scorer{scorer}})
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New()
	res, err := s.Run(context.Background(), sweep.RunOptions{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("run errors: %+v", res.Errors)
	}
	st, err := sweep.ComputeStats(context.Background(), store, "envs", sweep.StatsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := st.Groups[0].Accuracy
	if a.N != 8 || a.Mean != 1 {
		t.Fatalf("accuracy %.3f over %d outcomes, want 1 over 8", a.Mean, a.N)
	}
	if p.max > 2 || p.created != 16 || p.live != 0 {
		t.Fatalf("environments: at most %d at once (max_environments 2), %d created (want 8 runs + 8 scorers), %d left", p.max, p.created, p.live)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "envs", "*", "state.json")); len(left) > 0 {
		t.Fatalf("environments left after the sweep (the killed driver's is pruned when the sweep starts): %q", left)
	}
	t.Logf("%d environments, at most %d at once", p.created, p.max)
}

// killedSweep leaves in dir/envs the environment of a driving process
// killed with SIGKILL (TestDriverKilled's driver), as a killed sweep or
// worker leaves its runs'.
func killedSweep(t *testing.T, dir string) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "BWRAPENV_TEST_DRIVER="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if line != "started\n" {
		t.Fatalf("the driver did not start its environment: %q", line)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "envs", "*", "state.json")); len(left) != 1 {
		t.Fatalf("state files after the kill: %q", left)
	}
}

// BenchmarkSweep: a sweep of 40 or 500 runs (the size), four at
// once, each of two steps with one shell action (`echo … >> /work/f`)
// after a model call of 20 ms, in a sandbox per run — started cold
// (env=cold) or taken from a pool of four, destroyed in the background
// (env=pool) — against the same sweep with the shell on the host, run
// in the same iteration. x-host is the ratio of the sweeps' wall times
// (the goal: ≤ 1.3 for a sweep with environments), each measured until the
// sweep returned and the provider was closed (its pool drained, its
// background destroys finished).
func BenchmarkSweep(b *testing.B) {
	for _, runs := range []int{40, 500} {
		b.Run(fmt.Sprint("runs=", runs), func(b *testing.B) { benchSweep(b, runs) })
	}
}

func benchSweep(b *testing.B, runs int) {
	images := testImages(b)
	ctx := context.Background()
	sweepOnce := func(name string, opts *bwrapenv.Options) time.Duration {
		dir := b.TempDir()
		var agent *sweep.Agent
		turns := []scriptmodel.Turn{
			scriptmodel.Call("c1", shellexec.ToolName, map[string]string{"command": "echo one >> f"}),
			scriptmodel.Call("c2", shellexec.ToolName, map[string]string{"command": "echo two >> f && cat f"}),
			scriptmodel.Reply("done")}
		for i := range turns {
			turns[i].Delay = 20 * time.Millisecond
		}
		var p *bwrapenv.Provider
		if opts != nil {
			snaps, err := snapshotstore.OpenDir(filepath.Join(dir, "snapshots"))
			if err != nil {
				b.Fatal(err)
			}
			o := *opts
			o.Images, o.StateDir, o.Snapshots = images, filepath.Join(dir, "envs"), snaps
			if p, err = bwrapenv.New(o); err != nil {
				b.Fatal(err)
			}
			ex, err := shellexec.New(shellexec.Options{InEnvironment: true, Dir: "/work"})
			if err != nil {
				b.Fatal(err)
			}
			agent = &sweep.Agent{Agent: polyloop.Agent{Name: "a", Tools: ex.ToolSpecs(), Limits: polyloop.Limits{MaxSteps: 5},
				Environment: &polyloop.EnvSpec{Image: "busybox", WorkDir: "/work"}}, Executor: ex, Environments: p}
		} else {
			ex, err := shellexec.New(shellexec.Options{Dir: dir, Shell: "sh"})
			if err != nil {
				b.Fatal(err)
			}
			agent = &sweep.Agent{Agent: polyloop.Agent{Name: "a", Tools: ex.ToolSpecs(), Limits: polyloop.Limits{MaxSteps: 5}}, Executor: ex}
		}
		agent.Model, agent.Parser = scriptmodel.New(turns...), toolcallparser.New(toolcallparser.Options{})
		var tasks sweep.TaskList
		for i := range runs {
			tasks = append(tasks, sweep.Task{ID: fmt.Sprint("t", i), Input: "go"})
		}
		s, err := sweep.New(sweep.Definition{Name: name, Agents: []*sweep.Agent{agent}, Tasks: tasks, Concurrency: 4})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		store := memstore.New()
		res, err := s.Run(ctx, sweep.RunOptions{Store: store})
		if err != nil || len(res.Errors) > 0 {
			b.Fatalf("%v %+v", err, res.Errors)
		}
		if p != nil {
			if err := p.Close(); err != nil {
				b.Fatal(err)
			}
		}
		elapsed := time.Since(start)
		st, err := sweep.ComputeStats(ctx, store, name, sweep.StatsOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if g := st.Groups[0].Runs; g.Runs != runs || g.StopReasons[polyloop.StopCompleted] != runs {
			b.Fatalf("%s: %d runs, stop reasons %v", name, g.Runs, g.StopReasons)
		}
		return elapsed
	}
	var cold, pooled, host time.Duration
	for b.Loop() {
		cold += sweepOnce("env-cold", &bwrapenv.Options{})
		pooled += sweepOnce("env-pool", &bwrapenv.Options{Pool: 4, DestroyInBackground: true})
		host += sweepOnce("host", nil)
	}
	b.ReportMetric(float64(cold)/float64(host), "x-host-cold")
	b.ReportMetric(float64(pooled)/float64(host), "x-host-pool")
	n := float64(b.N * runs)
	b.ReportMetric(float64(cold.Milliseconds())/n, "ms/run-cold")
	b.ReportMetric(float64(pooled.Milliseconds())/n, "ms/run-pool")
	b.ReportMetric(float64(host.Milliseconds())/n, "ms/run-host")
}
