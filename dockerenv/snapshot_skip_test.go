package dockerenv_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/envsnap"
	"github.com/polyloop/polyloop/snapshotstore"
)

// TestSnapshotLeavesOutEngineFiles: a snapshot holds the files the run
// changed, not those the Engine puts into every container (the init
// binary bound at /sbin/docker-init, /etc/hosts, ...).
func TestSnapshotLeavesOutEngineFiles(t *testing.T) {
	im := testImage(t)
	dir := filepath.Join(t.TempDir(), "snapshots")
	p := openProvider(t, dir)
	ctx := context.Background()
	env, err := p.Create(ctx, polyloop.EnvSpec{RunID: "skip-run", Image: im})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Destroy(context.WithoutCancel(ctx))
	if res, err := env.Exec(ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", "echo x > /tmp/mine"}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("exec: %+v, %v", res, err)
	}
	ref, err := env.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	store, err := snapshotstore.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := envsnap.Load(ctx, store, ref)
	if err != nil {
		t.Fatal(err)
	}
	mine := false
	for _, e := range m.Entries {
		switch e.Path {
		case "/sbin/docker-init":
			t.Errorf("the snapshot holds %s (%+v), which the Engine put there", e.Path, e)
		case "/tmp/mine":
			mine = true
		}
	}
	if !mine {
		t.Errorf("the snapshot does not hold the run's file: %+v", m.Entries)
	}
}
