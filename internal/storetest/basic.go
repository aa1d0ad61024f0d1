package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
)

// expectConflict appends recs to run, expects ErrSeqConflict, and checks
// the log still equals before.
func expectConflict(t *testing.T, ctx context.Context, s polyloop.Store, run string, before []polyloop.Record, recs ...polyloop.Record) {
	t.Helper()
	err := polyloop.AppendRecords(ctx, s, run, recs...)
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
	if err := polyloop.AppendRecords(ctx, s, run, log[2], log[3], broken); err == nil {
		t.Fatal("Append whose third record has no body succeeded")
	}
	SameLog(t, ReadAll(t, ctx, s, run), log[:2])
	mustAppend(t, ctx, s, run, log[2:5]...)
	SameLog(t, ReadAll(t, ctx, s, run), log[:5])
}

// testLimits: the worst cases of outside data a record can hold. Arguments
// nested to MaxJSONDepth are stored and read back whole; arguments nested
// 10000 deep (encoding/json's own limit, which the record's levels would
// push past) or holding invalid UTF-8 are refused with ErrJSONLimit, and
// nothing of their Append is written.
func testLimits(t *testing.T, ctx context.Context, s polyloop.Store) {
	run := runName(t, "limits")
	log := Prefix(run, 2)
	mustAppend(t, ctx, s, run, log...)
	withArgs := func(args string) []polyloop.Record {
		before, _ := StepBatches(1, 2)
		reply := *before[0].Body.(*polyloop.ModelCallResult).Reply
		reply.ToolCalls = []polyloop.ToolCall{{ID: "call_1", Name: "noop", Args: json.RawMessage(args)}}
		before[0].Body = &polyloop.ModelCallResult{Step: 1, CallID: "m1.1", Reply: &reply}
		intent := *before[1].Body.(*polyloop.ActionIntent)
		intent.Action.Args = json.RawMessage(args)
		before[1].Body = &intent
		return before
	}
	nested := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for name, args := range map[string]string{"10000 levels": nested(10000), "invalid UTF-8": "[\"\xff\"]"} {
		if err := polyloop.AppendRecords(ctx, s, run, withArgs(args)...); !errors.Is(err, polyloop.ErrJSONLimit) {
			t.Fatalf("Append of arguments of %s: %v, want ErrJSONLimit", name, err)
		}
		SameLog(t, ReadAll(t, ctx, s, run), log)
	}
	deepest := withArgs(nested(polyloop.MaxJSONDepth))
	mustAppend(t, ctx, s, run, deepest...)
	got := ReadAll(t, ctx, s, run)
	SameLog(t, got, append(log, deepest...))
	if a := got[3].Body.(*polyloop.ActionIntent).Action.Args; string(a) != nested(polyloop.MaxJSONDepth) {
		t.Fatalf("arguments at the limit read back as %d bytes, want %d", len(a), 2*polyloop.MaxJSONDepth)
	}
}
