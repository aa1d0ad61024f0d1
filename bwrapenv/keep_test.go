//go:build linux

package bwrapenv_test

import (
	"context"
	"os"
	"path/filepath"
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

// TestSweepKeepEnvironmentsMarksKept: with KeepEnvironments, the
// environment a command scorer ran in is left and marked kept, so that the
// automatic prune of a later sweep's start spares it once its driver is
// gone (TestEnvPruneKept in cmd/polyloop checks that side).
func TestSweepKeepEnvironmentsMarksKept(t *testing.T) {
	images := testImages(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	snaps, err := snapshotstore.OpenDir(filepath.Join(dir, "snapshots"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := bwrapenv.New(bwrapenv.Options{Images: images, StateDir: filepath.Join(dir, "envs"), Snapshots: snaps})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := shellexec.New(shellexec.Options{InEnvironment: true, Dir: "/work", Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	agent := &sweep.Agent{
		Agent: polyloop.Agent{Name: "keeper", Tools: ex.ToolSpecs(), Limits: polyloop.Limits{MaxSteps: 3},
			Environment: &polyloop.EnvSpec{Image: "busybox", WorkDir: "/work"}},
		Model:    scriptmodel.New(scriptmodel.Call("c1", shellexec.ToolName, map[string]string{"command": "echo x > /work/mark"}), scriptmodel.Reply("done")),
		Parser:   toolcallparser.New(toolcallparser.Options{}),
		Executor: ex, Environments: p,
	}
	scorer, err := sweep.Command("mark", sweep.CommandOptions{Args: []string{"sh", "-c", "test -s /work/mark"}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sweep.New(sweep.Definition{Name: "keep", Agents: []*sweep.Agent{agent}, Tasks: sweep.TaskList{{ID: "t0", Input: "mark"}},
		Scorers: []sweep.Scorer{scorer}, KeepEnvironments: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background(), sweep.RunOptions{Store: memstore.New()})
	if err != nil || len(res.Errors) > 0 {
		t.Fatalf("sweep: %+v, %v", res.Errors, err)
	}
	kept, _ := filepath.Glob(filepath.Join(dir, "envs", "*", "kept"))
	if len(kept) != 1 {
		states, _ := filepath.Glob(filepath.Join(dir, "envs", "*", "state.json"))
		t.Fatalf("kept markers %q (environments left: %q), want the scorer's one", kept, states)
	}
	for _, k := range kept {
		os.RemoveAll(filepath.Dir(k)) // this process is its driver: nothing else removes it
	}
}
