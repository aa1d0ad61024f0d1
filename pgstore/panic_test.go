package pgstore

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/polyloop/polyloop/internal/storetest"
)

// TestPanicWhileLeading: writing a group panics (the afterRead hook, in the
// second group). The leader's caller gets the panic; the other Append of
// the group fails (it is not left waiting); nothing of the group is
// written; the leadership is handed on, so later Appends are committed.
func TestPanicWhileLeading(t *testing.T) {
	s := openWith(t, Options{MaxGroups: 1})
	started := make(chan struct{})
	var calls atomic.Int32
	s.afterRead = func(context.Context, *pgx.Conn) error {
		switch calls.Add(1) {
		case 1: // hold the first group until the two others queue
			close(started)
			for queued(s) < 2 {
				time.Sleep(time.Millisecond)
			}
		case 2:
			panic("injected")
		}
		return nil
	}
	storetest.PanicWhileLeading(t, s, started)
}

func queued(s *Store) int {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	return len(s.c.pending)
}
