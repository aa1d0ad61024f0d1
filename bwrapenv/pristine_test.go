//go:build linux

package bwrapenv_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/envsnap"
	"github.com/polyloop/polyloop/snapshotstore"
)

// TestSnapshotPristineSkipsTheWalk: the snapshot of an environment that
// holds its image only is the empty manifest, taken without a walk of the
// upper layer (a file planted there from the host is not seen); once a
// command ran, or when files were copied in at creation, the upper layer
// is walked again.
func TestSnapshotPristineSkipsTheWalk(t *testing.T) {
	p, snaps := newProvider(t)
	store, err := snapshotstore.OpenDir(snaps)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	paths := func(ref polyloop.EnvSnapshot) []string {
		t.Helper()
		m, err := envsnap.Load(ctx, store, ref)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range m.Entries {
			out = append(out, e.Path)
		}
		return out
	}
	e, err := p.Create(ctx, polyloop.EnvSpec{RunID: "pristine", Image: "busybox", WorkDir: "/work"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Destroy(ctx)
	uppers, _ := filepath.Glob(filepath.Join(stateDirs[p], "pristine-*", "rw", "upper"))
	if len(uppers) != 1 {
		t.Fatalf("upper layers: %v", uppers)
	}
	if err := os.WriteFile(filepath.Join(uppers[0], "planted"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	ref, err := e.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := paths(ref); len(got) != 0 {
		t.Fatalf("the fresh environment's snapshot walked the upper layer: %v", got)
	}
	if r, err := e.Exec(ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", "echo one > /work/f"}}); err != nil || r.ExitCode != 0 {
		t.Fatal(r, err)
	}
	if ref, err = e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if got := paths(ref); len(got) != 3 || got[0] != "/planted" || got[2] != "/work/f" {
		t.Fatalf("after a command: %v, want /planted, /work, /work/f", got)
	}

	f, err := p.Create(ctx, polyloop.EnvSpec{RunID: "with-files", Image: "busybox",
		Files: []polyloop.EnvFile{{Path: "/work/task.md", Content: []byte("task")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Destroy(ctx)
	if ref, err = f.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if got := paths(ref); len(got) != 2 || got[1] != "/work/task.md" {
		t.Fatalf("files copied in at creation: %v", got)
	}
}
