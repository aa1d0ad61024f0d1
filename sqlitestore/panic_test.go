package sqlitestore

import (
	"testing"
	"time"

	"github.com/polyloop/polyloop/internal/storetest"
)

// TestPanicWhileLeading: writing a batch panics (the afterInsert hook, on
// run "boom"). The leader's caller gets the panic; the other Append of the
// batch fails (it is not left waiting); nothing of the batch is written;
// later Appends are committed and Close returns.
func TestPanicWhileLeading(t *testing.T) {
	s := openT(t)
	started := make(chan struct{})
	s.afterInsert = func(run string, _ bool) error {
		switch run {
		case "first": // hold the first batch until the two others queue
			close(started)
			for queued(s) < 2 {
				time.Sleep(time.Millisecond)
			}
		case "boom":
			panic("injected")
		}
		return nil
	}
	storetest.PanicWhileLeading(t, s, started)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func queued(s *Store) int {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	return len(s.c.pending)
}
