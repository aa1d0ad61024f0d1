package pgstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/storetest"
)

// bigStarted is a run's RunStarted whose snapshot's task is n bytes long.
func bigStarted(runID string, n int) polyloop.Record {
	s, h := storetest.Snapshot("big", strings.Repeat("x", n))
	return polyloop.Record{Seq: 0, At: storetest.At(0), Body: &polyloop.RunStarted{
		RunID: runID, Snapshot: s, SnapshotHash: h, LibraryVersion: polyloop.LibraryVersion}}
}

// TestTakeCappedByBytes: a leader takes queued Appends up to maxBatchBytes
// of encoded records, in queue order, and always at least one, however
// large.
func TestTakeCappedByBytes(t *testing.T) {
	s := openT(t)
	s.maxBatchBytes = 1 << 20
	queue := func(id string, n int) {
		rec := bigStarted(id, n)
		r := mustRequest(t, s, id, []polyloop.Record{rec}, &polyloop.RunSummary{})
		r.state.Store(pending)
		s.c.pending = append(s.c.pending, r)
	}
	queue("huge", 3<<20)
	for i := range 5 {
		queue(fmt.Sprintf("big%d", i), 400<<10)
	}
	var got []int
	for len(s.c.pending) > 0 {
		batch := s.take()
		size := 0
		for _, r := range batch {
			size += r.rows.size()
		}
		if len(batch) > 1 && size > s.maxBatchBytes {
			t.Errorf("batch of %d Appends holds %d bytes, over the cap %d", len(batch), size, s.maxBatchBytes)
		}
		got = append(got, len(batch))
	}
	if want := []int{1, 2, 2, 1}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("batches of %v Appends, want %v", got, want)
	}
}

// TestLargeAppendsSplitIntoGroups: Appends queued behind a leader that add
// up to more than maxBatchBytes are committed in several groups, and every
// one of them succeeds.
func TestLargeAppendsSplitIntoGroups(t *testing.T) {
	s := openWith(t, Options{MaxGroups: 1})
	s.maxBatchBytes = 1 << 20
	ctx := context.Background()
	const queued = 5
	var once sync.Once
	sent := make(chan struct{})
	s.afterSend = func() {
		once.Do(func() { // hold the first group until the others queue
			close(sent)
			for {
				s.c.mu.Lock()
				n := len(s.c.pending)
				s.c.mu.Unlock()
				if n == queued {
					return
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	errs := make(chan error, queued+1)
	go func() { errs <- polyloop.AppendRecords(ctx, s, "first", storetest.Started("first", "big")) }()
	<-sent
	for i := range queued {
		id := fmt.Sprintf("big%d", i)
		go func() { errs <- polyloop.AppendRecords(ctx, s, id, bigStarted(id, 400<<10)) }()
	}
	for range queued + 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got, want := s.Stats().Commits, int64(1+3); got != want {
		t.Fatalf("%d commits, want %d (the first group, then the queued Appends two by two)", got, want)
	}
	for i := range queued {
		id := fmt.Sprintf("big%d", i)
		l, err := polyloop.ReadLog(ctx, s, id)
		if err != nil || len(l.Records) != 1 {
			t.Fatalf("run %s: %d records (%v), want 1", id, len(l.Records), err)
		}
	}
}
