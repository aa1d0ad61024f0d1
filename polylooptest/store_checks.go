package polylooptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/polyloop/polyloop"
)

// appendOK appends and wraps a failure with what was appended.
func appendOK(ctx context.Context, s polyloop.Store, runID string, recs ...polyloop.Record) error {
	if err := s.Append(ctx, runID, recs...); err != nil {
		return broke(ruleAcceptsNext, "Append of %d records from seq %d to run %q failed: %w", len(recs), firstSeq(recs), runID, err)
	}
	return nil
}

func firstSeq(recs []polyloop.Record) int64 {
	if len(recs) == 0 {
		return -1
	}
	return recs[0].Seq
}

// expectLog reads runID and compares it with want. A difference is not
// tagged with a rule: the caller knows which rule it shows broken.
func expectLog(ctx context.Context, s polyloop.Store, runID string, want []polyloop.Record) error {
	log, err := s.ReadLog(ctx, runID)
	if err != nil {
		return broke(ruleReadsBack, "ReadLog of run %q failed: %w", runID, err)
	}
	if err := sameRecords(want, log.Records); err != nil {
		return fmt.Errorf("run %q: %w", runID, err)
	}
	return nil
}

// sameRecords compares records by their JSON encoding, after one decoding
// (see normalJSON), and action intents by their action, which the encoding
// leaves out when it is a tool call.
func sameRecords(want, got []polyloop.Record) error {
	if len(got) != len(want) {
		return fmt.Errorf("log has %d records, want %d (seqs %v, want %v)", len(got), len(want), seqs(got), seqs(want))
	}
	for i := range want {
		w, err := normalJSON(want[i])
		if err != nil {
			return fmt.Errorf("kit record %d does not encode: %v", i, err)
		}
		g, err := normalJSON(got[i])
		if err != nil {
			return fmt.Errorf("record %d read back does not encode: %v", i, err)
		}
		if string(w) != string(g) {
			return fmt.Errorf("record %d (%s) differs from what was appended: %s", i, want[i].Kind(), firstDiff(w, g))
		}
		// The JSON leaves out an action that is a tool call: compare it.
		if wi, ok := want[i].Body.(*polyloop.ActionIntent); ok {
			if gi, ok := got[i].Body.(*polyloop.ActionIntent); !ok || !gi.Action.Equal(wi.Action) {
				return fmt.Errorf("record %d (%s) reads back without its action %+v (a store that decodes JSON resolves tool calls with polyloop.ResolveToolCall)", i, want[i].Kind(), wi.Action)
			}
		}
	}
	return nil
}

// normalJSON encodes r, decodes it and encodes it again: the encoding a
// store that keeps JSON hands back. (Invalid UTF-8 is encoded as the escape
// \ufffd, which decodes to U+FFFD, which encodes as itself.)
func normalJSON(r polyloop.Record) ([]byte, error) {
	b, err := r.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var again polyloop.Record
	if err := again.UnmarshalJSON(b); err != nil {
		return nil, err
	}
	return again.MarshalJSON()
}

func seqs(recs []polyloop.Record) []int64 {
	out := make([]int64, len(recs))
	for i, r := range recs {
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
	log, err := s.ReadLog(e.ctx, "polylooptest-never-written")
	if err != nil {
		return broke(ruleEmptyLog, "ReadLog of a run without records returned error %q; want an empty log and a nil error (a storage failure must never look like a fresh run, nor a fresh run like a failure)", err)
	}
	if len(log.Records) != 0 {
		return broke(ruleEmptyLog, "ReadLog of a run without records returned %d records", len(log.Records))
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
	err := s.Append(ctx, runID, recs...)
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
			return conflict(e.ctx, s, run, "a new run's first record at seq 1", nil, intents(1, 1, "x")...)
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

func checkStoreBatch(e *env, h StoreHarness) error {
	s, run := h.New(e.t), "polylooptest-batch"
	good := intents(0, 2, "w")
	if err := appendOK(e.ctx, s, run, good...); err != nil {
		return err
	}
	if err := conflict(e.ctx, s, run, "a batch starting at a taken seq", good, intents(1, 3, "x")...); err != nil {
		return err
	}
	inner := append(intents(2, 2, "x"), intents(3, 1, "y")...) // seqs 2, 3, 3
	if err := s.Append(e.ctx, run, inner...); err == nil {
		return broke(ruleBatchSeqs, "a batch with seqs %v succeeded; the records of one Append must have consecutive seqs", seqs(inner))
	}
	if err := expectLog(e.ctx, s, run, good); err != nil {
		return tag(ruleBatchSeqs, fmt.Errorf("a batch with seqs %v was refused but wrote something: %w", seqs(inner), err))
	}
	gap := append(intents(2, 1, "x"), intents(4, 1, "x")...) // seqs 2, 4
	if err := s.Append(e.ctx, run, gap...); err == nil {
		return broke(ruleBatchSeqs, "a batch with seqs %v succeeded; the records of one Append must have consecutive seqs", seqs(gap))
	}
	if err := expectLog(e.ctx, s, run, good); err != nil {
		return tag(ruleBatchSeqs, fmt.Errorf("a batch with seqs %v was refused but wrote something: %w", seqs(gap), err))
	}
	more := intents(2, 3, "z")
	if err := appendOK(e.ctx, s, run, more...); err != nil {
		return err
	}
	return tag(ruleReadsBack, expectLog(e.ctx, s, run, append(good, more...)))
}

func checkStoreEncodeFailure(e *env, h StoreHarness) error {
	s, run := h.New(e.t), "polylooptest-encode"
	first := intents(0, 1, "w")
	if err := appendOK(e.ctx, s, run, first...); err != nil {
		return err
	}
	bad := &polyloop.RunFinished{StopReason: polyloop.StopCompleted, Totals: polyloop.Totals{CostUSD: math.NaN()}}
	batch := records(1, &polyloop.ModelCallIntent{Step: 1, CallID: "m", Attempt: 1}, bad,
		&polyloop.ModelCallIntent{Step: 2, CallID: "n", Attempt: 1})
	err := s.Append(e.ctx, run, batch...)
	log, rerr := s.ReadLog(e.ctx, run)
	if rerr != nil {
		return broke(ruleReadsBack, "ReadLog after the batch failed: %w", rerr)
	}
	switch {
	case err != nil && len(log.Records) != 1:
		return broke(ruleAtomic, "a batch whose middle record cannot be encoded failed (%v) but left %d records, want 1: an Append is all or nothing", err, len(log.Records))
	case err == nil && len(log.Records) != 4:
		return broke(ruleAtomic, "a batch of 3 records succeeded but the log has %d records, want 4", len(log.Records))
	}
	return nil
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
	if err := s.Append(e.ctx, run, intents(1, 4, "x")...); err == nil {
		return fmt.Errorf("the armed store's Append succeeded; NewFaulty's arm must make the next Append fail")
	}
	if err := expectLog(e.ctx, s, run, first); err != nil {
		return tag(ruleAtomic, fmt.Errorf("an Append that failed partway left records behind: %w", err))
	}
	return nil
}

// checkStoreToolCallRefs: an Append holding a model result and an intent
// that refers to its tool call but holds another action is refused and
// writes nothing; appended without the model result, such an intent reads
// back with its own action, never replaced by the call.
func checkStoreToolCallRefs(e *env, h StoreHarness) error {
	s := h.New(e.t)
	reply := &polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{{ID: "call_1", Name: "echo", Args: json.RawMessage(`{"text":"hi"}`)}}}
	other := polyloop.Action{CallID: "call_1", Tool: "send", Args: json.RawMessage(`{"to":"x"}`)}
	bodies := func() []polyloop.RecordBody {
		return []polyloop.RecordBody{
			&polyloop.ModelCallResult{Step: 1, CallID: "m1.1", Reply: reply},
			&polyloop.ActionIntent{Step: 1, ActionID: "a1", Attempt: 1, ModelCallID: "m1.1", Action: other, Replay: polyloop.ReplaySafe, ToolCall: 1},
		}
	}
	run := "polylooptest-toolcall-batch"
	if err := s.Append(e.ctx, run, records(0, bodies()...)...); err == nil {
		return broke(ruleToolCallChecked, "an Append of a model result and an intent referring to its tool call 1 (echo) with action send succeeded")
	}
	if err := expectLog(e.ctx, s, run, nil); err != nil {
		return tag(ruleToolCallChecked, fmt.Errorf("the refused Append wrote something: %w", err))
	}
	run = "polylooptest-toolcall-apart"
	recs := records(0, bodies()...)
	if err := appendOK(e.ctx, s, run, recs[0]); err != nil {
		return err
	}
	if err := appendOK(e.ctx, s, run, recs[1]); err != nil {
		return err
	}
	log, err := s.ReadLog(e.ctx, run)
	if err != nil {
		return broke(ruleReadsBack, "ReadLog of run %q failed: %w", run, err)
	}
	if len(log.Records) == 2 {
		if in, ok := log.Records[1].Body.(*polyloop.ActionIntent); ok && (!in.Action.Equal(other) || in.ToolCall != 1) {
			return broke(ruleReadsBack, "an intent referring to tool call 1 (echo) with action send, appended apart from its model result, reads back as %+v, tool call %d", in.Action, in.ToolCall)
		}
	}
	return tag(ruleReadsBack, expectLog(e.ctx, s, run, recs))
}
