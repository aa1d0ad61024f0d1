package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/polyloop/polyloop"
)

func testEmptyLog(t *testing.T, ctx context.Context, s polyloop.Store) {
	l, err := s.ReadLog(ctx, runName(t, "unknown"))
	if err != nil {
		t.Fatalf("ReadLog of an unknown run: %v, want nil error", err)
	}
	if !l.Empty() || len(l.Records) != 0 {
		t.Fatalf("ReadLog of an unknown run: %d records, want none", len(l.Records))
	}
}

func testRoundTrip(t *testing.T, ctx context.Context, s polyloop.Store) {
	run := runName(t, "kinds")
	want := AllKinds(run)
	kinds := map[polyloop.RecordKind]bool{}
	for _, r := range want {
		kinds[r.Kind()] = true
	}
	if len(kinds) != 8 {
		t.Fatalf("AllKinds covers %d kinds, want 8", len(kinds))
	}
	// One record alone, then batches of 2, 3 and the rest.
	cuts := []int{0, 1, 3, 6, len(want)}
	for i := 1; i < len(cuts); i++ {
		mustAppend(t, ctx, s, run, want[cuts[i-1]:cuts[i]]...)
	}
	got := ReadAll(t, ctx, s, run)
	SameLog(t, got, want)
	for i, r := range got {
		if r.Seq != int64(i) || r.Kind() != want[i].Kind() || !r.At.Equal(want[i].At) {
			t.Fatalf("record %d: seq %d kind %s at %v, want seq %d kind %s at %v", i, r.Seq, r.Kind(), r.At, i, want[i].Kind(), want[i].At)
		}
	}
}

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

func testFirstAppend(t *testing.T, ctx context.Context, s polyloop.Store) {
	run := runName(t, "first")
	log := Prefix(run, 4)
	expectConflict(t, ctx, s, run, nil, log[1:3]...)
	expectConflict(t, ctx, s, run, nil, log[3])
	mustAppend(t, ctx, s, run, log[:2]...)
	SameLog(t, ReadAll(t, ctx, s, run), log[:2])
}

func testGap(t *testing.T, ctx context.Context, s polyloop.Store) {
	run := runName(t, "gap")
	log := Prefix(run, 8)
	mustAppend(t, ctx, s, run, log[:3]...)
	expectConflict(t, ctx, s, run, log[:3], log[4:6]...)
	expectConflict(t, ctx, s, run, log[:3], log[7])
	mustAppend(t, ctx, s, run, log[3:5]...)
	SameLog(t, ReadAll(t, ctx, s, run), log[:5])
}

func testDuplicate(t *testing.T, ctx context.Context, s polyloop.Store) {
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

func testNonConsecutive(t *testing.T, ctx context.Context, s polyloop.Store) {
	run := runName(t, "nonconsec")
	log := Prefix(run, 6)
	mustAppend(t, ctx, s, run, log[:2]...)
	bad := [][]polyloop.Record{
		{log[2], log[4]},
		{log[2], log[2]},
		{log[3], log[2]},
	}
	for _, recs := range bad {
		if err := s.Append(ctx, run, recs...); err == nil {
			t.Fatalf("Append of seqs %d,%d succeeded, want an error", recs[0].Seq, recs[1].Seq)
		}
		SameLog(t, ReadAll(t, ctx, s, run), log[:2])
	}
}

func testAllOrNothing(t *testing.T, ctx context.Context, s polyloop.Store) {
	run := runName(t, "atomic")
	log := Prefix(run, 8)
	mustAppend(t, ctx, s, run, log[:2]...)
	// The third record of the batch duplicates the second's seq.
	if err := s.Append(ctx, run, log[2], log[3], log[3]); err == nil {
		t.Fatal("Append whose third record repeats a seq succeeded")
	}
	SameLog(t, ReadAll(t, ctx, s, run), log[:2])
	// The third record cannot be encoded.
	broken := polyloop.Record{Seq: 4, At: At(4)}
	if err := s.Append(ctx, run, log[2], log[3], broken); err == nil {
		t.Fatal("Append whose third record has no body succeeded")
	}
	SameLog(t, ReadAll(t, ctx, s, run), log[:2])
	mustAppend(t, ctx, s, run, log[2:5]...)
	SameLog(t, ReadAll(t, ctx, s, run), log[:5])
}

func testIsolated(t *testing.T, ctx context.Context, s polyloop.Store) {
	a, b := runName(t, "a"), runName(t, "b")
	la, lb := Prefix(a, 6), Prefix(b, 3)
	mustAppend(t, ctx, s, a, la[:2]...)
	mustAppend(t, ctx, s, b, lb[:1]...)
	mustAppend(t, ctx, s, a, la[2:6]...)
	// b's next seq is 1, whatever a's is.
	expectConflict(t, ctx, s, b, lb[:1], la[5])
	mustAppend(t, ctx, s, b, lb[1:3]...)
	SameLog(t, ReadAll(t, ctx, s, a), la)
	SameLog(t, ReadAll(t, ctx, s, b), lb)
}

func testCancelled(t *testing.T, ctx context.Context, s polyloop.Store) {
	run := runName(t, "cancel")
	log := Prefix(run, 4)
	mustAppend(t, ctx, s, run, log[:2]...)
	done, cancel := context.WithCancel(ctx)
	cancel()
	err := s.Append(done, run, log[2:4]...)
	got := ReadAll(t, ctx, s, run)
	switch {
	case err == nil:
		SameLog(t, got, log)
	case !errors.Is(err, context.Canceled):
		t.Fatalf("Append with a cancelled context: %v, want an error wrapping context.Canceled", err)
	case len(got) != 2 && len(got) != 4:
		t.Fatalf("failed Append left %d records, want 2 or 4 (atomic)", len(got))
	}
	if _, err := s.ReadLog(done, run); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadLog with a cancelled context: %v, want nil or an error wrapping context.Canceled", err)
	}
}
