package polyloop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
)

func fixedClock() func() time.Time {
	t := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Millisecond); return t }
}

// TestLogFormatGolden pins the JSON encoding of the reference run's records
// (docs/log-format.md). Regenerate with -rewrite after a deliberate change
// of the format, and record it in docs/design.
func TestLogFormatGolden(t *testing.T) {
	store := memstore.New()
	r := newRunner(referenceScript(), store, newTestExec())
	r.Clock = fixedClock()
	if _, err := r.Run(context.Background(), "ref", equivalenceAgent(), polyloop.Task{Input: "reference task"}); err != nil {
		t.Fatal(err)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "ref")
	got, err := polyloop.EncodeRecords(log.Records)
	if err != nil {
		t.Fatal(err)
	}
	const file = "testdata/reference.jsonl"
	if rewriting() {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("log encoding changed; diff %s against a fresh -rewrite", file)
	}
	// Decoding gives back the same records.
	for i, line := range strings.Split(strings.TrimSpace(string(want)), "\n") {
		var rec polyloop.Record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		again, _ := rec.MarshalJSON()
		if string(again) != line {
			t.Fatalf("line %d does not round-trip:\n%s\n%s", i+1, line, again)
		}
	}
}

// A reader refuses a log of an unknown major version.
func TestLogVersionRefused(t *testing.T) {
	var r polyloop.Record
	err := json.Unmarshal([]byte(`{"seq":0,"at":"2026-01-01T00:00:00Z","kind":"run_started","v":4,"run_id":"x"}`), &r)
	if !errors.Is(err, polyloop.ErrLogVersion) {
		t.Fatalf("err = %v, want ErrLogVersion", err)
	}
	err = json.Unmarshal([]byte(`{"seq":0,"kind":"no_such_kind","v":1}`), &r)
	if err == nil {
		t.Fatal("unknown kind accepted")
	}
}

// StepCompleted's invariant: result id empty iff outcome empty.
func TestStepCompletedInvariant(t *testing.T) {
	settled := func(id string, o *polyloop.StepOutcome) polyloop.SettledAction {
		return polyloop.SettledAction{ResultID: id, Outcome: o}
	}
	bad := []*polyloop.StepCompleted{
		{Step: 1, ModelCallID: "m1.1", Decision: polyloop.DecisionAct, SettledAction: settled("a1", nil)},
		{Step: 1, ModelCallID: "m1.1", Decision: polyloop.DecisionAct, SettledAction: settled("", &polyloop.StepOutcome{Status: polyloop.Executed})},
		{Step: 1, ModelCallID: "m1.1", Decision: polyloop.DecisionFinal, SettledAction: settled("a1", &polyloop.StepOutcome{Status: polyloop.Executed})},
		{Step: 1, ModelCallID: "m1.1", Decision: polyloop.DecisionAct, SettledAction: settled("a1", &polyloop.StepOutcome{Status: polyloop.NotExecuted})},
	}
	for i, b := range bad {
		if b.Validate() == nil {
			t.Errorf("case %d: invalid step record accepted: %+v", i, b)
		}
	}
	good := &polyloop.StepCompleted{Step: 1, ModelCallID: "m1.1", Decision: polyloop.DecisionAct, SettledAction: polyloop.SettledAction{ResultID: "a1", Outcome: &polyloop.StepOutcome{Status: polyloop.NotExecuted}, Synthetic: true}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
}

// Texts and arguments keep their bytes through the log: no HTML escaping,
// and arguments in compact form both live and after a round trip, so a
// resumed run shows the model the same bytes as the live one.
func TestRecordBytesPreserved(t *testing.T) {
	store := memstore.New()
	model := &argsModel{args: `{ "q": "a < b && c > d" }`}
	r := newRunner(model, store, newTestExec())
	if _, err := r.Run(context.Background(), "r", testAgent(), polyloop.Task{Input: "<task> & more"}); err != nil {
		t.Fatal(err)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "r")
	live := string(log.ModelResults()[0].Reply.ToolCalls[0].Args)
	if live != `{"q":"a < b && c > d"}` {
		t.Fatalf("live args %s", live)
	}
	for _, rec := range log.Records {
		line, err := rec.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var back polyloop.Record
		if err := json.Unmarshal(line, &back); err != nil {
			t.Fatal(err)
		}
		again, _ := back.MarshalJSON()
		if string(again) != string(line) {
			t.Fatalf("round trip changed bytes:\n%s\n%s", line, again)
		}
		if strings.Contains(string(line), `\u003c`) {
			t.Fatalf("HTML-escaped: %s", line)
		}
	}
}

type argsModel struct{ args string }

func (m *argsModel) Complete(_ context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	if req.Step > 1 {
		return polyloop.ModelReply{Text: "done"}, nil
	}
	return polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{{ID: "c1", Name: "echo", Args: json.RawMessage(m.args)}}}, nil
}

// The envelope fast path and the generic decoder agree.
func TestEnvelopeFallback(t *testing.T) {
	reordered := `{"kind":"model_call_intent","v":1,"step":2,"call_id":"m2.1","attempt":1,"seq":7,"at":"2026-01-01T00:00:00Z"}`
	var r polyloop.Record
	if err := json.Unmarshal([]byte(reordered), &r); err != nil {
		t.Fatal(err)
	}
	if r.Seq != 7 || r.Kind() != polyloop.KindModelCallIntent || r.At.Year() != 2026 {
		t.Fatalf("%+v", r)
	}
}

// FuzzRecordDecode: decoding outside input never panics, and what decodes
// encodes and decodes again to the same bytes.
func FuzzRecordDecode(f *testing.F) {
	data, _ := os.ReadFile("testdata/reference.jsonl")
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f.Add([]byte(line))
	}
	f.Add([]byte(`{"seq":1,"at":"x","kind":"run_finished","v":1}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var r polyloop.Record
		if json.Unmarshal(line, &r) != nil {
			return
		}
		_ = r.Body.Validate()
		b, err := r.MarshalJSON()
		if err != nil {
			return // e.g. a decoded NaN-free body that still cannot encode
		}
		var r2 polyloop.Record
		if err := json.Unmarshal(b, &r2); err != nil {
			t.Fatalf("re-decode of %s: %v", b, err)
		}
		b2, _ := r2.MarshalJSON()
		if string(b) != string(b2) {
			t.Fatalf("not stable:\n%s\n%s", b, b2)
		}
	})
}
