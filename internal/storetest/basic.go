package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/polyloop/polyloop"
)

// expectConflict appends recs to run, expects ErrSeqConflict, and checks
// the log still equals before.
func expectConflict(t *testing.T, ctx context.Context, s polyloop.Store, run string, before []polyloop.Record, recs ...polyloop.Record) {
	t.Helper()
	err := s.Append(ctx, run, recs...)
	if !errors.Is(err, polyloop.ErrSeqConflict) {
		t.Fatalf("Append at seq %d with next seq %d: %v, want ErrSeqConflict", recs[0].Seq, len(before), err)
	}
	SameLog(t, ReadAll(t, ctx, s, run), before)
}

func testRepeatedAppend(t *testing.T, ctx context.Context, s polyloop.Store) {
	run := runName(t, "dup")
	log := Prefix(run, 6)
	mustAppend(t, ctx, s, run, log[:2]...)
	mustAppend(t, ctx, s, run, log[2:4]...)
	// The same records again, then different records at taken seqs.
	expectConflict(t, ctx, s, run, log[:4], log[2:4]...)
	other := Prefix(run+"-other", 6)
	expectConflict(t, ctx, s, run, log[:4], other[3:6]...)
	expectConflict(t, ctx, s, run, log[:4], other[0])
	mustAppend(t, ctx, s, run, log[4:6]...)
	SameLog(t, ReadAll(t, ctx, s, run), log)
}

func testUnencodable(t *testing.T, ctx context.Context, s polyloop.Store) {
	run := runName(t, "atomic")
	log := Prefix(run, 8)
	mustAppend(t, ctx, s, run, log[:2]...)
	// The third record cannot be encoded.
	broken := polyloop.Record{Seq: 4, At: At(4)}
	if err := s.Append(ctx, run, log[2], log[3], broken); err == nil {
		t.Fatal("Append whose third record has no body succeeded")
	}
	SameLog(t, ReadAll(t, ctx, s, run), log[:2])
	mustAppend(t, ctx, s, run, log[2:5]...)
	SameLog(t, ReadAll(t, ctx, s, run), log[:5])
}
