package sqlitestore

import (
	"context"
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
	ctx := context.Background()
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
	first := make(chan error, 1)
	go func() { first <- s.Append(ctx, "first", storetest.Started("first", "ag")) }()
	<-started
	results := make(chan outcome, 2)
	for _, run := range []string{"boom", "mate"} {
		go func() { results <- try(func() error { return s.Append(ctx, run, storetest.Started(run, "ag")) }) }()
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	checkPanicOutcomes(t, <-results, <-results)
	if err := s.Append(ctx, "after", storetest.Started("after", "ag")); err != nil {
		t.Fatalf("Append after the panic: %v", err)
	}
	for _, run := range []string{"boom", "mate"} {
		if l, err := s.ReadLog(ctx, run); err == nil && len(l.Records) > 0 {
			t.Fatalf("run %s holds %d records, want none", run, len(l.Records))
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func queued(s *Store) int {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	return len(s.c.pending)
}

// outcome is what an Append did: returned err, or panicked with p.
type outcome struct {
	err error
	p   any
}

func try(f func() error) (o outcome) {
	defer func() { o.p = recover() }()
	return outcome{err: f()}
}

// checkPanicOutcomes: of the batch's two Appends, the leader's caller got
// the injected panic and the other an error.
func checkPanicOutcomes(t *testing.T, a, b outcome) {
	t.Helper()
	if a.p == nil {
		a, b = b, a
	}
	if a.p != "injected" || b.p != nil || b.err == nil {
		t.Fatalf("outcomes %+v and %+v, want the injected panic and an error", a, b)
	}
	t.Logf("the other Append: %v", b.err)
}
