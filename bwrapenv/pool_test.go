//go:build linux

package bwrapenv_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/bwrapenv"
)

// waitPool waits until the pool holds idle sandboxes.
func waitPool(t *testing.T, p *bwrapenv.Provider, idle int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := p.Stats()
		if st.Idle >= idle {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pool holds %+v, want %d idle", st, idle)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// dirOf is the state directory of run's environment.
func dirOf(t *testing.T, p *bwrapenv.Provider, run string) string {
	t.Helper()
	statesMu.Lock()
	state := stateDirs[p]
	statesMu.Unlock()
	entries, _ := os.ReadDir(state)
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(state, e.Name(), "state.json"))
		var st struct {
			RunID string `json:"run_id"`
		}
		if err == nil && json.Unmarshal(raw, &st) == nil && st.RunID == run {
			return e.Name()
		}
	}
	t.Fatalf("no environment directory is labelled with run %s", run)
	return ""
}

// TestPoolTaken: a sandbox taken from the pool is labelled with the run,
// described as a fresh one is, and serves the run's spec (files, host
// variables, working directory) read when it is taken.
func TestPoolTaken(t *testing.T) {
	p := openProviderWith(t, filepath.Join(t.TempDir(), "snaps"), bwrapenv.Options{Pool: 2, DestroyInBackground: true})
	ctx := context.Background()
	spec := polyloop.EnvSpec{RunID: "cold", Image: "busybox", WorkDir: "/work", HostEnv: []string{"POLYLOOP_POOL_VAR"},
		Files: []polyloop.EnvFile{{Path: "/work/task.txt", Content: []byte("task")}}}
	t.Setenv("POLYLOOP_POOL_VAR", "at-cold")
	cold, err := p.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer cold.Destroy(ctx)
	if name := dirOf(t, p, "cold"); strings.HasPrefix(name, "pool-") {
		t.Fatalf("the first Create of a kind took %s from a pool that was empty", name)
	}
	waitPool(t, p, 2)
	t.Setenv("POLYLOOP_POOL_VAR", "at-take")
	spec.RunID = "pooled"
	e, err := p.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if name := dirOf(t, p, "pooled"); !strings.HasPrefix(name, "pool-") {
		t.Fatalf("with %+v, Create started %s instead of taking a pooled sandbox", p.Stats(), name)
	}
	if a, b := cold.Description(), e.Description(); !reflect.DeepEqual(a, b) {
		t.Errorf("descriptions differ:\n%+v (cold)\n%+v (pooled)", a, b)
	}
	r, err := e.Exec(ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", "pwd; cat task.txt; echo; echo $POLYLOOP_POOL_VAR; ls /tmp | wc -l"}})
	if err != nil || r.ExitCode != 0 {
		t.Fatal(r, err)
	}
	if got, want := string(r.Stdout), "/work\ntask\nat-take\n0\n"; got != want {
		t.Errorf("the pooled sandbox reads %q, want %q", got, want)
	}
	if err := e.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Exec(ctx, polyloop.ExecRequest{Argv: []string{"true"}}); !polyloop.EnvCannotServe(err) {
		t.Errorf("Exec after a background Destroy: %v, want ErrEnvLost", err)
	}
	cold.Destroy(ctx)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	statesMu.Lock()
	state := stateDirs[p]
	statesMu.Unlock()
	if left, _ := os.ReadDir(state); len(left) > 0 {
		t.Errorf("after Close, left: %v", left)
	}
	if st := p.Stats(); st.Live != 0 || st.Idle != 0 {
		t.Errorf("after Close: %+v", st)
	}
}

// TestPoolBound: with MaxEnvironments, the sandboxes that exist — in use,
// pooled, starting, being destroyed in the background — never exceed it,
// counted by the provider and by the directories on disk.
func TestPoolBound(t *testing.T) {
	const limit = 3
	p := openProviderWith(t, filepath.Join(t.TempDir(), "snaps"), bwrapenv.Options{Pool: 2, DestroyInBackground: true, MaxEnvironments: limit})
	statesMu.Lock()
	state := stateDirs[p]
	statesMu.Unlock()
	ctx := context.Background()
	stop := make(chan struct{})
	var worst, worstDirs int
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			default:
			}
			worst = max(worst, p.Stats().Live)
			entries, _ := os.ReadDir(state)
			worstDirs = max(worstDirs, len(entries))
			time.Sleep(time.Millisecond)
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for w := range 6 { // twice the bound: half of them wait
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 4 {
				e, err := p.Create(ctx, polyloop.EnvSpec{RunID: fmt.Sprintf("bound-%d-%d", w, i), Image: "busybox"})
				if err != nil {
					errs <- err
					return
				}
				if _, err := e.Exec(ctx, polyloop.ExecRequest{Argv: []string{"true"}}); err != nil {
					errs <- err
				}
				e.Destroy(ctx)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if worst > limit || worstDirs > limit {
		t.Errorf("with MaxEnvironments %d: %d sandboxes counted at once, %d directories", limit, worst, worstDirs)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(state); len(left) > 0 {
		t.Errorf("after Close, left: %v", left)
	}
}
