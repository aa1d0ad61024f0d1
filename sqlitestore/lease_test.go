//go:build unix

package sqlitestore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/polylooptest"
)

// TestLeaseConformance runs the lease suite; a peer is a second Store on
// the same file, as another process would open it.
func TestLeaseConformance(t *testing.T) {
	polylooptest.TestLeaser(t, polylooptest.LeaseHarness{
		New: func(t testing.TB) polyloop.Leaser {
			s, err := Open(filepath.Join(t.TempDir(), "leases.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
		Peer: func(t testing.TB, l polyloop.Leaser) polyloop.Leaser {
			s, err := Open(l.(*Store).path, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
		// A killed process runs no code: its descriptors are closed by
		// the kernel, its lock file or record stays.
		Crash: func(_ testing.TB, _ polyloop.Leaser, ls polyloop.Lease) { crashLease(ls) },
		// The documented bound is one poll; a loaded machine (-race, other
		// builds) may delay the poller well past it, so the check allows more.
		LostWithin: 20 * LeasePollInterval,
	})
}

// Lock file names are injective, stay within a file name's length, and
// never start with '.' (the directory's own files do).
func TestLeaseFileName(t *testing.T) {
	seen := map[string]string{}
	ids := []string{"r", "R", "r/1.0", "r%2F1.0", "r%", ".r", "r.lock", "%h", "01JXYZ/3:key", "ünï",
		strings.Repeat("x", 66), strings.Repeat("x", 201), strings.Repeat("x", 202), strings.Repeat("/", 100)}
	for _, id := range ids {
		name := leaseFileName(id)
		if other, ok := seen[name]; ok {
			t.Errorf("%q and %q share the lock file %q", id, other, name)
		}
		seen[name] = id
		if len(name) > 255 || strings.HasPrefix(name, ".") || strings.ContainsAny(name, "/\x00") {
			t.Errorf("%q → %q: not a safe file name", id, name)
		}
	}
}

// TestLeaseFollowsTheResolvedPath: one database reached by two spellings —
// a symlink to the file, a symlinked directory, a path through ".." — has
// one lease per run, so a second holder is refused whatever path it opened.
func TestLeaseFollowsTheResolvedPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real := filepath.Join(dir, "real.db")
	if err := os.Symlink(real, filepath.Join(dir, "link.db")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, filepath.Join(dir, "alias")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	holder, err := Open(real, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	ctx := context.Background()
	lease, err := holder.AcquireLease(ctx, "r1", polyloop.LeaseRequest{Owner: polyloop.LeaseOwner{Host: "h", PID: 1, Token: "first"}})
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(ctx)
	for _, spelling := range []string{"link.db", "alias/real.db", "alias/link.db", "sub/../real.db"} {
		other, err := Open(filepath.Join(dir, spelling), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = other.AcquireLease(ctx, "r1", polyloop.LeaseRequest{Owner: polyloop.LeaseOwner{Host: "h", PID: 2, Token: "second"}})
		var held *polyloop.LeaseHeldError
		if !errors.As(err, &held) || held.Holder.Token != "first" {
			t.Errorf("%s: a second acquisition gave %v, want *LeaseHeldError naming the first holder", spelling, err)
		}
		if owner, live, err := other.LiveHolder(ctx, "r1"); err != nil || !live || owner.Token != "first" {
			t.Errorf("%s: LiveHolder = %+v, %v, %v; want the first holder, live", spelling, owner, live, err)
		}
		other.Close()
	}
	if _, err := os.Stat(filepath.Join(dir, "link.db.leases")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a lease directory was made for the symlink's name: %v", err)
	}
}

// TestAcquisitionWaitsOutAProbe: LiveHolder holds a shared lock on the
// run's lock file for a moment; an acquisition meeting it — on a free run,
// or on a dead holder's — waits it out and is granted, not refused as if a
// holder had the run.
func TestAcquisitionWaitsOutAProbe(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "leases.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	owner := polyloop.LeaseOwner{Host: "h", PID: 1, Token: "t1"}
	dead, err := s.AcquireLease(ctx, "dead", polyloop.LeaseRequest{Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	crashLease(dead) // the holder dies: its descriptor closes, its file or record stays
	for _, run := range []string{"free", "dead"} {
		path := filepath.Join(s.leaseDir, leaseFileName(run))
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		go func() { time.Sleep(5 * time.Millisecond); f.Close() }() // the probe ends
		ls, err := s.AcquireLease(ctx, run, polyloop.LeaseRequest{Owner: polyloop.LeaseOwner{Host: "h", PID: 2, Token: "t2-" + run}})
		if err != nil {
			t.Fatalf("run %s: an acquisition during a probe: %v", run, err)
		}
		ls.Release(ctx)
	}
}
