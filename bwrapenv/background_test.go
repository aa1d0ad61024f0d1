//go:build linux

package bwrapenv_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/envsnap"
	"github.com/polyloop/polyloop/snapshotstore"
)

// TestBackgroundProcessSnapshots: a process that left its action's group
// (setsid) keeps changing the files while snapshots are taken — swapping
// /work/f between a hard link to a regular file and a symbolic link to a
// host file, and writing a file by `echo > f.tmp; mv f.tmp f`. No snapshot
// fails, and none holds the host file's content.
func TestBackgroundProcessSnapshots(t *testing.T) {
	p, snaps := newProvider(t)
	store, err := snapshotstore.OpenDir(snaps)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	secret := filepath.Join(t.TempDir(), "host-secret")
	if err := os.WriteFile(secret, []byte("host-secret-content"), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := p.Create(ctx, polyloop.EnvSpec{RunID: "background", Image: "busybox", WorkDir: "/work"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Destroy(ctx)
	script := fmt.Sprintf(`mkdir -p /work; echo mine > /work/r
setsid sh -c 'while :; do ln -f /work/r /work/f.h; mv -f /work/f.h /work/f; ln -sf %s /work/f.l; mv -f /work/f.l /work/f; done' </dev/null >/dev/null 2>&1 &
setsid sh -c 'i=0; while :; do i=$((i+1)); echo $i > /work/g.tmp; mv /work/g.tmp /work/g; done' </dev/null >/dev/null 2>&1 &
sleep 0.2`, secret)
	if r, err := e.Exec(ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", script}}); err != nil || r.ExitCode != 0 {
		t.Fatal(r, err)
	}
	n := 150
	if testing.Short() {
		n = 30
	}
	for i := 0; i < n; i++ {
		ref, err := e.Snapshot(ctx)
		if err != nil {
			t.Fatalf("snapshot %d with a background writer: %v", i, err)
		}
		m, err := envsnap.Load(ctx, store, ref)
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range m.Entries {
			if en.Kind == envsnap.Symlink && en.Path == "/work/f" && en.Target != secret {
				t.Errorf("snapshot %d: /work/f links to %q", i, en.Target)
			}
			if en.Kind != envsnap.File {
				continue
			}
			var b bytes.Buffer
			if err := envsnap.WriteContent(ctx, store, en, &b); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(b.String(), "host-secret") {
				t.Fatalf("snapshot %d holds the host file as %s: %q", i, en.Path, b.String())
			}
		}
	}
}

// TestExecMissingDir: an Exec in a directory that does not exist says so
// (not "fork/exec /bin/sh: no such file or directory").
func TestExecMissingDir(t *testing.T) {
	p, _ := newProvider(t)
	ctx := context.Background()
	e, err := p.Create(ctx, polyloop.EnvSpec{RunID: "missing-dir", Image: "busybox"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Destroy(ctx)
	r, err := e.Exec(ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", "true"}, Dir: "/no/such/dir"})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode == 0 || !strings.Contains(string(r.Stderr), "/no/such/dir") {
		t.Errorf("Exec in a missing directory = exit %d, stderr %q; want a failure naming the directory", r.ExitCode, r.Stderr)
	}
}
