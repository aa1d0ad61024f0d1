package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// RacingWriters has writers goroutines per run, over runs runs, append
// the run's log (Prefix of steps records) through the stores of handles,
// in turn (two Stores on one file or database race that way, as two
// processes would): each reads the log, appends the next one to six
// records, and starts again until the log is whole. A quarter of the
// Appends get a deadline short enough to end while queued. Every Append
// must succeed, fail with ErrSeqConflict (another writer appended first) or
// end with its deadline; any other error — a deadlock the database broke,
// say — fails the test. Then every acknowledged Append must be in the log,
// every log whole, and ListRuns (of the first handle) must report the fold
// of each log.
func RacingWriters(t testing.TB, ctx context.Context, handles []polyloop.Store, runs, writers, steps int) {
	t.Helper()
	logs := map[string][]polyloop.Record{}
	for r := range runs {
		id := fmt.Sprintf("race%d", r)
		logs[id] = Prefix(id, steps)
	}
	type ack struct {
		run      string
		from, to int
	}
	var (
		mu   sync.Mutex
		acks []ack
		wg   sync.WaitGroup
	)
	n := 0
	for id, log := range logs {
		for range writers {
			s := handles[n%len(handles)]
			n++
			wg.Add(1)
			go func(seed uint64) {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, 1))
				for {
					l, err := polyloop.ReadLog(ctx, s, id)
					if err != nil {
						t.Errorf("ReadLog %s: %v", id, err)
						return
					}
					from := len(l.Records)
					if from >= len(log) {
						return
					}
					to := min(from+1+rng.IntN(6), len(log))
					wait := time.Second
					if rng.IntN(4) == 0 {
						wait = time.Duration(rng.IntN(2000)) * time.Microsecond
					}
					c, cancel := context.WithTimeout(ctx, wait)
					err = polyloop.AppendRecords(c, s, id, log[from:to]...)
					cancel()
					switch {
					case err == nil:
						mu.Lock()
						acks = append(acks, ack{id, from, to})
						mu.Unlock()
					case errors.Is(err, polyloop.ErrSeqConflict), errors.Is(err, context.DeadlineExceeded):
					default:
						t.Errorf("Append %s %d..%d: %v", id, from, to, err)
						return
					}
				}
			}(uint64(n))
		}
	}
	wg.Wait()
	lister, ok := handles[0].(polyloop.RunLister)
	if !ok {
		t.Fatal("store has no ListRuns")
	}
	sums, err := lister.ListRuns(ctx, polyloop.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]polyloop.RunSummary{}
	for _, sm := range sums {
		byID[sm.RunID] = sm
	}
	got := map[string]polyloop.RunLog{}
	for id, log := range logs {
		l, err := polyloop.ReadLog(ctx, handles[0], id)
		if err != nil {
			t.Fatal(err)
		}
		got[id] = l
		SameLog(t, l.Records, log)
		var want polyloop.RunSummary
		for _, r := range l.Records {
			want.Apply(r)
		}
		want.RunID = id
		sameSummary(t, "ListRuns of "+id, byID[id], want)
	}
	for _, a := range acks {
		if len(got[a.run].Records) < a.to {
			t.Errorf("run %s: acknowledged records %d..%d missing", a.run, a.from, a.to-1)
		}
	}
}
