//go:build linux

package bwrapenv_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
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

func (e *countedEnv) Destroy(ctx context.Context) error {
	e.once.Do(func() {
		e.c.mu.Lock()
		e.c.live--
		e.c.mu.Unlock()
	})
	return e.Environment.Destroy(ctx)
}

// TestSweepEnvironments: a sweep of eight runs, four at once, at most two
// environments at once. Each run's action writes /work/mark, and /work/seen
// when it finds a mark already there (another run's file); the command
// scorer runs in the finished run's environment and scores 1 only when the
// mark is there and nothing was seen. Accuracy 1 over every run: the runs
// never saw each other's files, and the scorer saw each run's.
func TestSweepEnvironments(t *testing.T) {
	images := testImages(t)
	dir := t.TempDir()
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
		tasks = append(tasks, sweep.Task{ID: fmt.Sprint("t", i), Input: fmt.Sprint("mark ", i)})
	}
	scorer, err := sweep.Command("mark", sweep.CommandOptions{Args: []string{"sh", "-c", "test -s /work/mark && test ! -e /work/seen"}})
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
	t.Logf("%d environments, at most %d at once", p.created, p.max)
}
