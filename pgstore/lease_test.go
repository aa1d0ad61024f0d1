package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/polylooptest"
)

// TestLeaseConformance runs the lease suite, each leaser in a schema of its
// own; a peer is a second Store on the schema, with its own lease session.
func TestLeaseConformance(t *testing.T) {
	dsn(t)
	polylooptest.TestLeaser(t, polylooptest.LeaseHarness{
		New: func(t testing.TB) polyloop.Leaser { return openT(t) },
		Peer: func(t testing.TB, l polyloop.Leaser) polyloop.Leaser {
			s, err := Open(context.Background(), dsn(t), &Options{Schema: l.(*Store).schema})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
		Crash:      crashLeaseSession,
		LostWithin: 10 * LeasePingInterval, // the bound is one ping; a loaded machine delays it
	})
}

// crashLeaseSession cuts the lease session's socket, as a killed process's
// kernel would, and waits until the server has ended the session.
func crashLeaseSession(t testing.TB, l polyloop.Leaser, _ polyloop.Lease) {
	s := l.(*Store)
	ctx := context.Background()
	s.leases.mu.Lock()
	conn := s.leases.conn
	pid := conn.PgConn().PID()
	conn.PgConn().Conn().Close()
	s.leases.drop()
	s.leases.mu.Unlock()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var n int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server still has session %d 10 s after its socket closed", pid)
		}
	}
}
