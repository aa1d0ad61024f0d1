//go:build linux

package sqlitestore

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

func openLeases(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func owner(n int) polyloop.LeaseOwner {
	return polyloop.LeaseOwner{Host: "h", PID: n, Token: "t" + strconv.Itoa(n), Since: time.Unix(int64(n), 0).UTC()}
}

// TestLeaseCreatesNoFilePerRun: the leases of many runs, held at once and
// released, live in the one lease file: no file is created per run (design
// record 0052).
func TestLeaseCreatesNoFilePerRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	s := openLeases(t, path)
	ctx := context.Background()
	var held []polyloop.Lease
	for i := range 20 {
		l, err := s.AcquireLease(ctx, "run-"+strconv.Itoa(i), polyloop.LeaseRequest{Owner: owner(i + 1)})
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	names := func() []string {
		ents, err := os.ReadDir(path + ".leases")
		if err != nil {
			t.Fatal(err)
		}
		var ns []string
		for _, e := range ents {
			ns = append(ns, e.Name())
		}
		return ns
	}
	if ns := names(); len(ns) != 1 || ns[0] != runsFileName {
		t.Errorf("with 20 leases held, the lease directory holds %q, want only %q", ns, runsFileName)
	}
	for _, l := range held {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if ns := names(); len(ns) != 1 || ns[0] != runsFileName {
		t.Errorf("after release, the lease directory holds %q, want only %q", ns, runsFileName)
	}
}

// oldBinaryLock takes a run's lease as binaries before 0052 do: its own
// lock file, flocked, naming the holder.
func oldBinaryLock(t *testing.T, s *Store, runID string, o polyloop.LeaseOwner) *os.File {
	t.Helper()
	if err := os.MkdirAll(s.leaseDir, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(s.leaseDir, leaseFileName(runID)), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(o)
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestLeaseOlderBinary: a run an older binary holds (its per-run lock file)
// is refused, naming that holder, and probed live; once it dies, the run is
// taken over naming it, and its file goes. An older binary that takes a
// run this one holds (it does not know the lease file) makes this holder's
// Lost close within the poll.
func TestLeaseOlderBinary(t *testing.T) {
	s := openLeases(t, filepath.Join(t.TempDir(), "runs.db"))
	ctx := context.Background()
	old := oldBinaryLock(t, s, "r1", owner(1))
	_, err := s.AcquireLease(ctx, "r1", polyloop.LeaseRequest{Owner: owner(2)})
	var held *polyloop.LeaseHeldError
	if !errors.As(err, &held) || held.Holder.Token != "t1" {
		t.Fatalf("acquiring a run an older binary holds: %v, want *LeaseHeldError naming it", err)
	}
	if o, live, err := s.LiveHolder(ctx, "r1"); err != nil || !live || o.Token != "t1" {
		t.Errorf("LiveHolder = %+v, %v, %v; want the older binary, live", o, live, err)
	}
	old.Close() // it dies
	l, err := s.AcquireLease(ctx, "r1", polyloop.LeaseRequest{Owner: owner(2)})
	if err != nil {
		t.Fatal(err)
	}
	if tk := l.TakenOver(); tk == nil || tk.Reason != polyloop.TakeoverHolderDead || tk.From.Token != "t1" {
		t.Errorf("TakenOver = %+v, want the dead older binary", tk)
	}
	if _, err := os.Stat(filepath.Join(s.leaseDir, leaseFileName("r1"))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead holder's lock file stayed: %v", err)
	}
	_ = oldBinaryLock(t, s, "r1", owner(3)) // an older binary takes it from under this holder
	select {
	case <-l.Lost():
	case <-time.After(20 * LeasePollInterval):
		t.Fatal("the holder did not see Lost closed after an older binary took its run")
	}
	if _, err := s.AcquireLease(ctx, "r1", polyloop.LeaseRequest{Owner: owner(4)}); !errors.As(err, &held) || held.Holder.Token != "t3" {
		t.Errorf("after the older binary took the run: %v, want *LeaseHeldError naming it", err)
	}
	l.Release(ctx)
}

// TestLeaseHashCollision: two runs whose locks take the same byte exclude
// each other — the second is refused as held, in the same Store and in
// another — but neither is named the other's holder, the probe reports the
// second free, and once the first is released the second is granted with
// no take-over.
func TestLeaseHashCollision(t *testing.T) {
	defer func(f func([32]byte) int64) { runLockOffset = f }(runLockOffset)
	runLockOffset = func([32]byte) int64 { return runLockBase + 7 }
	path := filepath.Join(t.TempDir(), "runs.db")
	a, b := openLeases(t, path), openLeases(t, path)
	ctx := context.Background()
	la, err := a.AcquireLease(ctx, "run-a", polyloop.LeaseRequest{Owner: owner(1)})
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*Store{"same store": a, "another store": b} {
		_, err := s.AcquireLease(ctx, "run-b", polyloop.LeaseRequest{Owner: owner(2)})
		var held *polyloop.LeaseHeldError
		if !errors.As(err, &held) {
			t.Fatalf("%s: a run whose lock collides with a held one: %v, want refused", name, err)
		}
		if held.Holder.Token != "" {
			t.Errorf("%s: refused naming %s, the holder of another run", name, held.Holder)
		}
	}
	if o, live, err := b.LiveHolder(ctx, "run-b"); err != nil || live {
		t.Errorf("LiveHolder(run-b) = %+v, %v, %v; want free", o, live, err)
	}
	if o, live, err := b.LiveHolder(ctx, "run-a"); err != nil || !live || o.Token != "t1" {
		t.Errorf("LiveHolder(run-a) = %+v, %v, %v; want its holder", o, live, err)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lb, err := b.AcquireLease(ctx, "run-b", polyloop.LeaseRequest{Owner: owner(2)})
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Release(ctx)
	if tk := lb.TakenOver(); tk != nil {
		t.Errorf("TakenOver = %+v after the colliding run was released, want nil", tk)
	}
}

// TestLeaseRecordSlotsReused: the records of released leases are reused, so
// the lease file stays as large as the most leases held at once; a dead
// holder's record is kept for its run's take-over.
func TestLeaseRecordSlotsReused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	s, p := openLeases(t, path), openLeases(t, path)
	ctx := context.Background()
	dead, err := p.AcquireLease(ctx, "dead", polyloop.LeaseRequest{Owner: owner(9)})
	if err != nil {
		t.Fatal(err)
	}
	crashLease(dead)
	for i := range 50 {
		l, err := s.AcquireLease(ctx, "run-"+strconv.Itoa(i%3), polyloop.LeaseRequest{Owner: owner(i + 1)})
		if err != nil {
			t.Fatal(err)
		}
		l2, err := p.AcquireLease(ctx, "other-"+strconv.Itoa(i), polyloop.LeaseRequest{Owner: owner(i + 100)})
		if err != nil {
			t.Fatal(err)
		}
		l.Release(ctx)
		l2.Release(ctx)
	}
	st, err := os.Stat(filepath.Join(s.leaseDir, runsFileName))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > 3*recordSize {
		t.Errorf("lease file of %d bytes after at most 3 leases held at once, want ≤ %d", st.Size(), 3*recordSize)
	}
	l, err := s.AcquireLease(ctx, "dead", polyloop.LeaseRequest{Owner: owner(10)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if tk := l.TakenOver(); tk == nil || tk.From.Token != "t9" || tk.Reason != polyloop.TakeoverHolderDead {
		t.Errorf("TakenOver = %+v, want the dead holder t9", tk)
	}
}

// TestLeaseFileRemovedIsLost: the lease file removed (or replaced) while a
// lease is held: a new holder locks its run in the new file, and the old
// holder sees Lost closed within a poll, as with 0016's removed lock file.
func TestLeaseFileRemovedIsLost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	a, b := openLeases(t, path), openLeases(t, path)
	ctx := context.Background()
	la, err := a.AcquireLease(ctx, "r", polyloop.LeaseRequest{Owner: owner(1)})
	if err != nil {
		t.Fatal(err)
	}
	defer la.Release(ctx)
	if err := os.Remove(filepath.Join(path+".leases", runsFileName)); err != nil {
		t.Fatal(err)
	}
	lb, err := b.AcquireLease(ctx, "r", polyloop.LeaseRequest{Owner: owner(2)})
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Release(ctx)
	select {
	case <-la.Lost():
	case <-time.After(20 * LeasePollInterval):
		t.Fatal("the lease file was removed and the run leased again, and its first holder was not told")
	}
}
