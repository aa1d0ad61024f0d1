package polylooptest

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/polyloop/polyloop"
)

// The kit's rows are real records, encoded (Record.MarshalJSON), with their
// checksums and their Records, as the Runner hands them to a store.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// rowsOf are the rows of records.
func rowsOf(recs []polyloop.Record) []polyloop.Row {
	rows := make([]polyloop.Row, len(recs))
	for i, r := range recs {
		data, err := r.MarshalJSON()
		if err != nil {
			panic(fmt.Sprintf("polylooptest: kit record %d does not encode: %v", i, err))
		}
		rows[i] = polyloop.Row{Seq: r.Seq, Kind: r.Kind(), Data: data, Checksum: crc32.Checksum(data, castagnoli), Record: r}
	}
	return rows
}

// appendOK appends the rows of recs and wraps a failure with what was
// appended.
func appendOK(ctx context.Context, s polyloop.Store, runID string, recs ...polyloop.Record) error {
	if err := s.Append(ctx, runID, rowsOf(recs)); err != nil {
		return broke(ruleAcceptsNext, "Append of %d rows from seq %d to run %q failed: %w", len(recs), firstSeq(recs), runID, err)
	}
	return nil
}

func firstSeq(recs []polyloop.Record) int64 {
	if len(recs) == 0 {
		return -1
	}
	return recs[0].Seq
}

// expectLog reads runID's rows and compares them with the rows of want. A
// difference is not tagged with a rule: the caller knows which rule it
// shows broken.
func expectLog(ctx context.Context, s polyloop.Store, runID string, want []polyloop.Record) error {
	rows, err := s.ReadRows(ctx, runID)
	if err != nil {
		return broke(ruleReadsBack, "ReadRows of run %q failed: %w", runID, err)
	}
	_, keeper := s.(polyloop.RecordKeeper)
	if err := sameRows(rowsOf(want), rows, keeper); err != nil {
		return fmt.Errorf("run %q: %w", runID, err)
	}
	return nil
}

// sameRows compares rows as a store owes them back: the same seq, kind,
// checksum and bytes — or, from a RecordKeeper, the same record (compared
// by its encoding).
func sameRows(want, got []polyloop.Row, keeper bool) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d rows, want %d (seqs %v, want %v)", len(got), len(want), seqs(got), seqs(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if g.Seq != w.Seq || g.Kind != w.Kind {
			return fmt.Errorf("row %d is seq %d (%s), want seq %d (%s) (rows %v)", i, g.Seq, g.Kind, w.Seq, w.Kind, seqs(got))
		}
		if keeper {
			if g.Record.Body == nil {
				return fmt.Errorf("row %d (%s) of a RecordKeeper has no record", i, w.Kind)
			}
			data, err := g.Record.MarshalJSON()
			if err != nil || string(data) != string(w.Data) {
				return fmt.Errorf("row %d (%s): the record read back differs from the one appended (%v): %s", i, w.Kind, err, firstDiff(w.Data, data))
			}
			continue
		}
		if string(g.Data) != string(w.Data) {
			return fmt.Errorf("row %d (%s): its bytes differ from those appended: %s", i, w.Kind, firstDiff(w.Data, g.Data))
		}
		if g.Checksum != w.Checksum || g.Unchecked {
			return fmt.Errorf("row %d (%s): checksum %08x (unchecked %v), want %08x as appended", i, w.Kind, g.Checksum, g.Unchecked, w.Checksum)
		}
	}
	return nil
}

func seqs(rows []polyloop.Row) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.Seq
	}
	return out
}

// firstDiff shows the two encodings around their first differing byte.
func firstDiff(want, got []byte) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	from := max(i-40, 0)
	end := func(b []byte) int { return min(i+80, len(b)) }
	return fmt.Sprintf("at byte %d (lengths %d and %d):\nwant …%s…\ngot  …%s…", i, len(want), len(got), want[from:end(want)], got[from:end(got)])
}

func checkStoreEmpty(e *env, h StoreHarness) error {
	s := h.New(e.t)
	rows, err := s.ReadRows(e.ctx, "polylooptest-never-written")
	if err != nil {
		return broke(ruleEmptyLog, "ReadRows of a run without rows returned error %q; want no rows and a nil error (a storage failure must never look like a fresh run, nor a fresh run like a failure)", err)
	}
	if len(rows) != 0 {
		return broke(ruleEmptyLog, "ReadRows of a run without rows returned %d rows", len(rows))
	}
	return nil
}

func checkStoreRoundTrip(e *env, h StoreHarness) error {
	s := h.New(e.t)
	one, batch := "polylooptest-roundtrip-one", "polylooptest-roundtrip-batch"
	recs := records(0, sampleBodies(one, h.largeBody())...)
	for _, r := range recs {
		if err := appendOK(e.ctx, s, one, r); err != nil {
			return err
		}
	}
	if err := expectLog(e.ctx, s, one, recs); err != nil {
		return tag(ruleReadsBack, fmt.Errorf("appended one by one: %w", err))
	}
	recs = records(0, sampleBodies(batch, h.largeBody())...)
	if err := appendOK(e.ctx, s, batch, recs...); err != nil {
		return err
	}
	if err := expectLog(e.ctx, s, batch, recs); err != nil {
		return tag(ruleReadsBack, fmt.Errorf("appended as one batch: %w", err))
	}
	return nil
}

// conflict appends recs, which must fail with ErrSeqConflict, and checks that
// the log is still want.
func conflict(ctx context.Context, s polyloop.Store, runID, what string, want []polyloop.Record, recs ...polyloop.Record) error {
	err := s.Append(ctx, runID, rowsOf(recs))
	if err == nil {
		return broke(ruleSeqConflict, "%s: Append from seq %d succeeded; want an error with polyloop.ErrSeqConflict", what, firstSeq(recs))
	}
	if !errors.Is(err, polyloop.ErrSeqConflict) {
		return broke(ruleSeqConflict, "%s: Append returned %q (%T), which is not errors.Is polyloop.ErrSeqConflict", what, err, err)
	}
	if err := expectLog(ctx, s, runID, want); err != nil {
		return tag(ruleSeqConflict, fmt.Errorf("%s: the conflicting Append wrote something: %w", what, err))
	}
	return nil
}

func checkStoreSeqRule(e *env, h StoreHarness) error {
	s, run := h.New(e.t), "polylooptest-seq"
	recs := intents(0, 3, "w")
	steps := []func() error{
		func() error {
			return conflict(e.ctx, s, run, "a new run's first row at seq 1", nil, intents(1, 1, "x")...)
		},
		func() error { return appendOK(e.ctx, s, run, recs[0]) },
		func() error { return conflict(e.ctx, s, run, "seq 0 again", recs[:1], intents(0, 1, "x")...) },
		func() error { return conflict(e.ctx, s, run, "a gap (seq 2 after 0)", recs[:1], intents(2, 1, "x")...) },
		func() error { return appendOK(e.ctx, s, run, recs[1]) },
		func() error { return conflict(e.ctx, s, run, "seq 1 again", recs[:2], intents(1, 1, "x")...) },
		func() error { return conflict(e.ctx, s, run, "a negative seq", recs[:2], intents(-1, 1, "x")...) },
		func() error { return appendOK(e.ctx, s, run, recs[2]) },
		func() error { return tag(ruleReadsBack, expectLog(e.ctx, s, run, recs)) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// checkStoreBatch: an Append of several rows whose first is taken leaves
// nothing, not even its rows past the run's end; a good batch is all there.
func checkStoreBatch(e *env, h StoreHarness) error {
	s, run := h.New(e.t), "polylooptest-batch"
	good := intents(0, 2, "w")
	if err := appendOK(e.ctx, s, run, good...); err != nil {
		return err
	}
	if err := conflict(e.ctx, s, run, "a batch starting at a taken seq and running past the end", good, intents(1, 3, "x")...); err != nil {
		return err
	}
	more := intents(2, 3, "z")
	if err := appendOK(e.ctx, s, run, more...); err != nil {
		return err
	}
	return tag(ruleReadsBack, expectLog(e.ctx, s, run, append(good, more...)))
}

// checkStoreNotRetained: after Append returns, the Runner reuses the rows
// and their bytes for its next write; the store must not see that.
func checkStoreNotRetained(e *env, h StoreHarness) error {
	s, run := h.New(e.t), "polylooptest-not-retained"
	recs := records(0, sampleBodies(run, 4096)...)
	rows := rowsOf(recs)
	if err := s.Append(e.ctx, run, rows); err != nil {
		return broke(ruleAcceptsNext, "Append of %d rows to run %q failed: %w", len(rows), run, err)
	}
	for i := range rows { // what a caller's next write does to its scratch
		for j := range rows[i].Data {
			rows[i].Data[j] = ' '
		}
		rows[i].Seq, rows[i].Kind, rows[i].Checksum = -1, "", 0
	}
	return tag(ruleNotRetained, expectLog(e.ctx, s, run, recs))
}

func checkStoreInjectedFailure(e *env, h StoreHarness) error {
	if h.NewFaulty == nil {
		return skipf("the harness gives no NewFaulty store, so no failure can be injected in the middle of an Append")
	}
	s, arm := h.NewFaulty(e.t)
	run := "polylooptest-injected"
	first := intents(0, 1, "w")
	if err := appendOK(e.ctx, s, run, first...); err != nil {
		return err
	}
	arm()
	if err := s.Append(e.ctx, run, rowsOf(intents(1, 4, "x"))); err == nil {
		return fmt.Errorf("the armed store's Append succeeded; NewFaulty's arm must make the next Append fail")
	}
	if err := expectLog(e.ctx, s, run, first); err != nil {
		return tag(ruleAtomic, fmt.Errorf("an Append that failed partway left rows behind: %w", err))
	}
	return nil
}
