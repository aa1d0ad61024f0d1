package dockerenv

import (
	"context"
	"os"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/envsnap"
	"github.com/polyloop/polyloop/snapshotstore"
)

// TestSnapshotPathsVanish: paths that a process of the container (one
// that outlived its action) removes between the Engine's list of changes
// and their stat, or between the scan and the read, are left out of the
// snapshot, which does not fail.
func TestSnapshotPathsVanish(t *testing.T) {
	image := os.Getenv("POLYLOOP_TEST_DOCKER_IMAGE")
	if image == "" {
		t.Skip("POLYLOOP_TEST_DOCKER_IMAGE is not set (.ci/env-images DIR imports the test image)")
	}
	ctx := context.Background()
	store := snapshotstore.NewMemory()
	p, err := New(Options{Snapshots: store})
	if err != nil {
		t.Fatal(err)
	}
	en, err := p.Create(ctx, polyloop.EnvSpec{RunID: "vanish-" + t.Name(), Image: image, WorkDir: "/work"})
	if err != nil {
		t.Fatal(err)
	}
	defer en.Destroy(ctx)
	e := en.(*environment)
	if r, err := e.Exec(ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", "mkdir -p /work/d && echo a > /work/a && echo b > /work/b && echo c > /work/d/c && echo k > /work/k"}}); err != nil || r.ExitCode != 0 {
		t.Fatal(r, err)
	}
	rm := func(script string) {
		if r, err := e.exec(ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", script}}); err != nil || r.ExitCode != 0 {
			t.Fatal(r, err)
		}
	}
	scanHook = func(stage string) {
		switch stage {
		case "listed":
			rm("rm -r /work/a /work/d")
		case "scanned":
			rm("rm /work/b")
		}
	}
	defer func() { scanHook = nil }()
	ref, err := e.Snapshot(ctx)
	if err != nil {
		t.Fatalf("snapshot while paths vanish: %v", err)
	}
	m, err := envsnap.Load(ctx, store, ref)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, en := range m.Entries {
		got[en.Path] = true
	}
	if got["/work/a"] || got["/work/b"] || got["/work/d"] || got["/work/d/c"] || !got["/work/k"] {
		t.Errorf("entries %v: want /work/k, and none of the vanished paths", m.Entries)
	}
}
