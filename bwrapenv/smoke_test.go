//go:build linux

package bwrapenv_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/bwrapenv"
	"github.com/polyloop/polyloop/snapshotstore"
)

func provider(t testing.TB) *bwrapenv.Provider {
	images := os.Getenv("POLYLOOP_TEST_BWRAP_IMAGES")
	if images == "" {
		t.Skip("POLYLOOP_TEST_BWRAP_IMAGES is not set (.ci/env-images builds the test image)")
	}
	store, err := snapshotstore.OpenDir(filepath.Join(t.TempDir(), "snapshots"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := bwrapenv.New(bwrapenv.Options{Images: images, StateDir: filepath.Join(t.TempDir(), "envs"), Snapshots: store})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSmoke(t *testing.T) {
	p := provider(t)
	ctx := context.Background()
	e, err := p.Create(ctx, polyloop.EnvSpec{RunID: "smoke", Image: "busybox"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Destroy(ctx)
	r, err := e.Exec(ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", "echo hello; id; ls /; cat /proc/1/cmdline | tr '\\0' ' '; echo; ps"}})
	t.Logf("%+v %v\nstdout:\n%s\nstderr:\n%s", r.ExitCode, err, r.Stdout, r.Stderr)
}
