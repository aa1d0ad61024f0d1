package polylooptest

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/polyloop/polyloop"
)

// ruleSharedKept is the rule of a polyloop.SnapshotKeeper.
const ruleSharedKept rule = "a SnapshotKeeper MUST return each row with the Shared snapshot it was appended with (the same Ref, Data byte for byte), without retaining it"

// capture is a SnapshotKeeper in front of the store under test: it keeps a
// copy of the rows the core hands it, forwards them, then overwrites the
// rows it was given, as the Runner reuses its scratch (Store contract).
type capture struct {
	polyloop.Store
	rows []polyloop.Row
}

func (c *capture) SharesSnapshots() {}

func (c *capture) Append(ctx context.Context, runID string, rows []polyloop.Row) error {
	for _, r := range rows {
		r.Data = slices.Clone(r.Data)
		if sh := r.Shared; sh != nil {
			r.Shared = &polyloop.SharedSnapshot{Ref: sh.Ref, Data: slices.Clone(sh.Data)}
		}
		c.rows = append(c.rows, r)
	}
	err := c.Store.Append(ctx, runID, rows)
	for _, r := range rows {
		if sh := r.Shared; sh != nil {
			for i := range sh.Data {
				sh.Data[i] = 'X'
			}
		}
	}
	return err
}

// checkStoreShared: two runs of one configuration on different tasks,
// written through polyloop.AppendRecords as the Runner writes them: their
// run_started rows refer to one shared snapshot, the store returns each row
// with it, and ReadLog gives back each run's records whole — its own task
// in the snapshot.
func checkStoreShared(e *env, h StoreHarness) error {
	s := h.New(e.t)
	if _, ok := s.(polyloop.SnapshotKeeper); !ok {
		return skipf("the store (%T) does not implement polyloop.SnapshotKeeper", s)
	}
	var refs []string
	for _, run := range []string{"polylooptest-shared-a", "polylooptest-shared-b"} {
		recs := records(0, sampleBodies(run, 64)[:3]...)
		c := &capture{Store: s}
		if err := polyloop.AppendRecords(e.ctx, c, run, recs...); err != nil {
			return broke(ruleAcceptsNext, "AppendRecords of run %q to a SnapshotKeeper: %w", run, err)
		}
		if c.rows[0].Shared == nil {
			return fmt.Errorf("polylooptest: the core handed run %q's run_started row without its Shared snapshot", run)
		}
		refs = append(refs, c.rows[0].Shared.Ref)
		got, err := s.ReadRows(e.ctx, run)
		if err != nil {
			return broke(ruleReadsBack, "ReadRows of run %q failed: %w", run, err)
		}
		if err := sameRows(c.rows, got, false); err != nil {
			return tag(ruleReadsBack, fmt.Errorf("run %q: %w", run, err))
		}
		for i, w := range c.rows {
			g := got[i].Shared
			switch {
			case w.Shared == nil && g != nil:
				return broke(ruleSharedKept, "run %q: row %d came back with a shared snapshot it was not appended with", run, i)
			case w.Shared != nil && g == nil:
				return broke(ruleSharedKept, "run %q: row %d came back without its shared snapshot %s", run, i, w.Shared.Ref)
			case w.Shared != nil && (g.Ref != w.Shared.Ref || !bytes.Equal(g.Data, w.Shared.Data)):
				return broke(ruleSharedKept, "run %q: row %d came back with shared snapshot %s, appended with %s: %s", run, i, g.Ref, w.Shared.Ref, firstDiff(w.Shared.Data, g.Data))
			}
		}
		log, err := polyloop.ReadLog(e.ctx, s, run)
		if err != nil {
			return broke(ruleSharedKept, "ReadLog of run %q: %w", run, err)
		}
		if err := sameRecords(recs, log.Records); err != nil {
			return tag(ruleSharedKept, fmt.Errorf("run %q: %w", run, err))
		}
		// The ranged read: the run_started row comes with its snapshot in
		// the chunk that holds it, however small.
		first, err := s.ReadRowsFrom(e.ctx, run, 0, 1)
		if err != nil || len(first) != 1 {
			return broke(ruleReadsRange, "ReadRowsFrom(%q, from 0, limit 1): %d rows, error %v", run, len(first), err)
		}
		if sh := first[0].Shared; sh == nil || sh.Ref != c.rows[0].Shared.Ref || !bytes.Equal(sh.Data, c.rows[0].Shared.Data) {
			return broke(ruleSharedKept, "run %q: ReadRowsFrom's run_started row came back without its shared snapshot %s", run, c.rows[0].Shared.Ref)
		}
		streamed, err := streamRecords(e.ctx, s, run)
		if err != nil {
			return broke(ruleSharedKept, "StreamLog of run %q: %w", run, err)
		}
		if err := sameRecords(recs, streamed); err != nil {
			return tag(ruleSharedKept, fmt.Errorf("run %q read as a stream: %w", run, err))
		}
	}
	if refs[0] != refs[1] {
		return fmt.Errorf("polylooptest: two runs of one configuration refer to snapshots %s and %s", refs[0], refs[1])
	}
	return nil
}

// sameRecords compares records by their encoding, each record wanted as
// a store that shares nothing gives it back: encoded and decoded (text
// that is not UTF-8 reads back as U+FFFD).
func sameRecords(want, got []polyloop.Record) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d records, want %d", len(got), len(want))
	}
	for i := range want {
		w, _ := want[i].MarshalJSON()
		var back polyloop.Record
		if err := back.UnmarshalJSON(w); err != nil {
			return fmt.Errorf("polylooptest: kit record %d does not decode: %v", i, err)
		}
		w, _ = back.MarshalJSON()
		g, err := got[i].MarshalJSON()
		if err != nil || !bytes.Equal(w, g) {
			return fmt.Errorf("record %d read back differs from the one appended (%v): %s", i, err, firstDiff(w, g))
		}
	}
	return nil
}
