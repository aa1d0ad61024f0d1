package polylooptest

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/polyloop/polyloop"
)

// ruleReadsRange is the rule of Store.ReadRowsFrom.
const ruleReadsRange rule = "ReadRowsFrom MUST return at most limit of the run's rows from seq from on, in seq order, as ReadRows returns them, fewer only at the run's last row: its chunks end to end are the log, nothing skipped or repeated"

// readChunks reads runID's rows limit at a time, as a LogStream does:
// from one past the last row read until a chunk comes back short. It
// checks each chunk's bound and that it starts where it was asked.
func readChunks(ctx context.Context, s polyloop.Store, runID string, limit int) ([]polyloop.Row, error) {
	var out []polyloop.Row
	for {
		from := int64(len(out))
		rows, err := s.ReadRowsFrom(ctx, runID, from, limit)
		if err != nil {
			return nil, broke(ruleReadsRange, "ReadRowsFrom(%q, from %d, limit %d) failed: %w", runID, from, limit, err)
		}
		if len(rows) > limit {
			return nil, broke(ruleReadsRange, "ReadRowsFrom(%q, from %d, limit %d) returned %d rows (seqs %v)", runID, from, limit, len(rows), seqs(rows))
		}
		if len(rows) > 0 && rows[0].Seq != from {
			return nil, broke(ruleReadsRange, "ReadRowsFrom(%q, from %d, limit %d) began at seq %d (seqs %v)", runID, from, limit, rows[0].Seq, seqs(rows))
		}
		out = append(out, rows...)
		if len(rows) < limit {
			return out, nil
		}
	}
}

// checkStoreRanged: a log of a few Appends of different sizes, read in
// chunks of every size from one row to more than the log, and from every
// seq, comes back row for row as appended; a read past the end, or of a
// run without rows, gives none and a nil error; a chunk read while
// another writer appends ends at an Append's end.
func checkStoreRanged(e *env, h StoreHarness) error {
	s, run := h.New(e.t), "polylooptest-ranged"
	recs := records(0, sampleBodies(run, h.largeBody())...)
	recs = append(recs, intents(int64(len(recs)), 9, "r")...)
	for i := 0; i < len(recs); {
		n := min(1+i%4, len(recs)-i) // Appends of 1, 2, 3, 4 rows...
		if err := appendOK(e.ctx, s, run, recs[i:i+n]...); err != nil {
			return err
		}
		i += n
	}
	_, keeper := s.(polyloop.RecordKeeper)
	want := rowsOf(recs)
	for _, limit := range []int{1, 2, 3, 5, len(recs) - 1, len(recs), len(recs) + 7} {
		got, err := readChunks(e.ctx, s, run, limit)
		if err != nil {
			return err
		}
		if err := sameRows(want, got, keeper); err != nil {
			return broke(ruleReadsRange, "run %q read in chunks of %d rows: %w", run, limit, err)
		}
	}
	for from := range int64(len(recs)) {
		got, err := s.ReadRowsFrom(e.ctx, run, from, 3)
		if err != nil {
			return broke(ruleReadsRange, "ReadRowsFrom(%q, from %d, limit 3) failed: %w", run, from, err)
		}
		if err := sameRows(want[from:min(from+3, int64(len(want)))], got, keeper); err != nil {
			return broke(ruleReadsRange, "ReadRowsFrom(%q, from %d, limit 3): %w", run, from, err)
		}
	}
	for _, c := range []struct {
		run  string
		from int64
	}{{run, int64(len(recs))}, {run, int64(len(recs)) + 100}, {"polylooptest-ranged-never-written", 0}} {
		got, err := s.ReadRowsFrom(e.ctx, c.run, c.from, 4)
		if err != nil || len(got) != 0 {
			return broke(ruleReadsRange, "ReadRowsFrom(%q, from %d, limit 4), past the run's last row, returned %d rows and error %v; want none and a nil error", c.run, c.from, len(got), err)
		}
	}
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if got, err := s.ReadRowsFrom(ctx, run, 0, 4); err != nil && (!errors.Is(err, context.Canceled) || len(got) > 0) {
		return broke(ruleReadsRange, "ReadRowsFrom with a cancelled context returned %d rows and %q (%T); a failed read returns no rows and an error errors.Is context.Canceled", len(got), err, err)
	}
	return checkRangedWhileAppending(e, s)
}

// checkRangedWhileAppending reads a run in chunks of 2 rows while a writer
// appends it 3 rows at a time: the rows read are a prefix of the log that
// ends at an Append's end (whole Appends, never a part of one).
func checkRangedWhileAppending(e *env, s polyloop.Store) error {
	run := "polylooptest-ranged-growing"
	const appends = 30
	recs := intents(0, 3*appends, "g")
	var wg sync.WaitGroup
	var appendErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < len(recs); i += 3 {
			if err := appendOK(e.ctx, s, run, recs[i:i+3]...); err != nil {
				appendErr = err
				return
			}
		}
	}()
	defer wg.Wait()
	_, keeper := s.(polyloop.RecordKeeper)
	for range 20 {
		got, err := readChunks(e.ctx, s, run, 2)
		if err != nil {
			return err
		}
		if len(got)%3 != 0 {
			return broke(ruleReadsRange, "run %q, appended 3 rows at a time, read in chunks of 2 while it grew: %d rows (seqs %v), a part of an Append", run, len(got), seqs(got))
		}
		if err := sameRows(rowsOf(recs[:len(got)]), got, keeper); err != nil {
			return broke(ruleReadsRange, "run %q read in chunks while it grew: %w", run, err)
		}
		if len(got) == len(recs) {
			break
		}
	}
	wg.Wait()
	if appendErr != nil {
		return appendErr
	}
	got, err := readChunks(e.ctx, s, run, 4)
	if err != nil {
		return err
	}
	if err := sameRows(rowsOf(recs), got, keeper); err != nil {
		return broke(ruleReadsRange, "run %q read in chunks after it grew: %w", run, err)
	}
	return nil
}

// streamRecords reads a run's records through polyloop.StreamLog, the
// chunked reader.
func streamRecords(ctx context.Context, s polyloop.Store, runID string) ([]polyloop.Record, error) {
	st := polyloop.StreamLog(ctx, s, runID)
	var out []polyloop.Record
	for st.Next() {
		out = append(out, st.Record())
	}
	return slices.Clip(out), st.Err()
}
