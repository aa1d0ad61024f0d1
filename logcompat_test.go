package polyloop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/polylooptest"
)

// readJSONL reads a stored log, one record per line, through the Runner's
// reader (ReadLog): each line is a row of the log.
func readJSONL(t *testing.T, path string) polyloop.RunLog {
	t.Helper()
	log, err := polyloop.ReadLog(context.Background(), rowsOfFile(t, path), "ref")
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return log
}

// A log written in format 1.0 (before batches: no action_result, no
// attempts on results, no log_version) still reads, plans, totals, and
// resumes from every one of its prefixes under today's library. The resumed
// run ends with the history of a run started today — or, for a prefix past
// step 6, whose two tool calls the 1.0 parser refused ("one tool call per
// turn") where today's runs both, with the 1.0 run's own history.
func TestLogFormat10StillResumes(t *testing.T) {
	old := readJSONL(t, "testdata/logs/v1.0-reference.jsonl")
	if v := old.Started().LogVersion; v != "" {
		t.Fatalf("the stored 1.0 log has log_version %q", v)
	}
	plan, err := polyloop.PlanResume(old)
	if err != nil || plan.Action != polyloop.PlanAlreadyFinished {
		t.Fatalf("plan of the finished 1.0 log: %+v, %v", plan, err)
	}
	if got, want := polyloop.ComputeTotals(old), old.Finished().Totals; got != want {
		t.Fatalf("totals of the 1.0 log %+v, its run_finished says %+v", got, want)
	}
	today, then := polyloop.History(referenceLog(t)), polyloop.History(old)
	step6 := -1
	for i, r := range old.Records {
		if sc, ok := r.Body.(*polyloop.StepCompleted); ok && sc.Step == 6 {
			step6 = i
		}
	}
	if step6 < 0 || reflect.DeepEqual(today, then) {
		t.Fatal("the stored 1.0 log is not the one this test expects")
	}
	resumeEveryPrefix(t, old, func(k int, got polyloop.RunLog) {
		h, want := polyloop.History(got), today
		if k > step6 {
			want = then
		}
		if !reflect.DeepEqual(h, want) {
			t.Fatalf("prefix %d: history after resuming differs from a run started today:\n%s", k, historyDiff(h, want))
		}
	})
}

func historyDiff(got, want []polyloop.Message) string {
	for i := 0; i < len(got) && i < len(want); i++ {
		if !reflect.DeepEqual(got[i], want[i]) {
			return fmt.Sprintf("message %d:\n got  %+v\n want %+v", i, got[i], want[i])
		}
	}
	return fmt.Sprintf("%d messages, want %d", len(got), len(want))
}

// A log written in format 1.1 (action intents copy their tool call in
// full; 1.2 refers to it) still reads, plans, totals and resumes from every
// one of its prefixes: the resumed run ends with the history of a run
// started today, and keeps writing copies, every record of version 1, so
// that a 1.1 library can still continue it.
func TestLogFormat11StillResumes(t *testing.T) {
	old := readJSONL(t, "testdata/logs/v1.1-reference.jsonl")
	if v := old.Started().LogVersion; v != "1.1" {
		t.Fatalf("the stored 1.1 log has log_version %q", v)
	}
	copies := 0
	for _, in := range old.ActionIntents() {
		if in.ToolCall != 0 {
			t.Fatalf("the stored 1.1 log has an intent referring to tool call %d", in.ToolCall)
		}
		if in.Action.Tool != "" && in.Action.CallID != "" {
			copies++
		}
	}
	if copies == 0 {
		t.Fatal("the stored 1.1 log has no intent copying its tool call")
	}
	plan, err := polyloop.PlanResume(old)
	if err != nil || plan.Action != polyloop.PlanAlreadyFinished {
		t.Fatalf("plan of the finished 1.1 log: %+v, %v", plan, err)
	}
	if got, want := polyloop.ComputeTotals(old), old.Finished().Totals; got != want {
		t.Fatalf("totals of the 1.1 log %+v, its run_finished says %+v", got, want)
	}
	todayLog := referenceLog(t)
	if err := polylooptest.CheckEquivalent(old, todayLog); err != nil {
		t.Fatalf("the 1.1 log is not the run a run started today is: %v", err)
	}
	today := polyloop.History(todayLog)
	if h := polyloop.History(old); !reflect.DeepEqual(h, today) {
		t.Fatalf("history of the 1.1 log differs from a run started today:\n%s", historyDiff(h, today))
	}
	resumeEveryPrefix(t, old, func(k int, got polyloop.RunLog) {
		for _, r := range got.Records[k:] {
			if in, ok := r.Body.(*polyloop.ActionIntent); ok && in.ToolCall != 0 {
				t.Fatalf("prefix %d: the resumed 1.1 run wrote an intent referring to tool call %d: %+v", k, in.ToolCall, in)
			}
		}
		encoded, err := polyloop.EncodeRecords(got.Records)
		if err != nil {
			t.Fatalf("prefix %d: %v", k, err)
		}
		if strings.Contains(string(encoded), `"tool_call"`) || strings.Count(string(encoded), `"v":1,`) != len(got.Records) {
			t.Fatalf("prefix %d: the resumed 1.1 run is not all copies of version 1:\n%s", k, encoded)
		}
		back := polyloop.RunLog{RunID: "ref"}
		for _, line := range strings.Split(strings.TrimSpace(string(encoded)), "\n") {
			var r polyloop.Record
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("prefix %d: %v", k, err)
			}
			back.Records = append(back.Records, r)
		}
		if h := polyloop.History(back); !reflect.DeepEqual(h, today) {
			t.Fatalf("prefix %d: history of the resumed log, read back, differs from a run started today:\n%s", k, historyDiff(h, today))
		}
	})
}

// resumeEveryPrefix resumes every proper prefix of the stored log old to
// its end, checks that the stored records are kept as they were and that
// the run completes, and hands each resumed log to check.
func resumeEveryPrefix(t *testing.T, old polyloop.RunLog, check func(k int, got polyloop.RunLog)) {
	t.Helper()
	ctx := context.Background()
	for k := 1; k < len(old.Records); k++ {
		store := memstore.New()
		store.Put("ref", old.Records[:k])
		res, err := newRunner(referenceScript(), store, newTestExec()).Resume(ctx, "ref", equivalenceAgent())
		if err != nil {
			t.Fatalf("resume of the prefix of %d records (format %s): %v", k, logFormatOf(old), err)
		}
		if res.StopReason != polyloop.StopCompleted {
			t.Fatalf("prefix %d: %+v", k, res)
		}
		got, _ := polyloop.ReadLog(ctx, store, "ref")
		if !reflect.DeepEqual(got.Records[:k], old.Records[:k]) {
			t.Fatalf("prefix %d: the stored records changed", k)
		}
		check(k, got)
	}
}

// logFormatOf is the format version a log says it was started with.
func logFormatOf(l polyloop.RunLog) string {
	if rs := l.Started(); rs != nil && rs.LogVersion != "" {
		return rs.LogVersion
	}
	return "1.0"
}

// A run started today refers to its tool calls: as a durable store encodes
// them, one batch per Append, an intent appended with the model result it
// refers to leaves its action out and is of version 2 (which a 1.0 or 1.1
// reader refuses); one appended without it (the second action of step 6's
// batch, after the first's result) keeps a copy, and every other record is
// of version 1.
func TestToolCallIntentsAreVersion2(t *testing.T) {
	store := &batchRecorder{Store: memstore.New()}
	res, err := newRunner(referenceScript(), store, newTestExec()).Run(context.Background(), "ref", equivalenceAgent(), polyloop.Task{Input: "reference task"})
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("reference run: %+v, %v", res, err)
	}
	refs, copies := 0, 0
	for _, batch := range store.batches {
		for i, row := range batch {
			r, data := row.Record, row.Data
			var env struct {
				V        int  `json:"v"`
				ToolCall int  `json:"tool_call"`
				Action   *any `json:"action"`
			}
			if err := json.Unmarshal(data, &env); err != nil {
				t.Fatal(err)
			}
			want := 1
			if in, ok := r.Body.(*polyloop.ActionIntent); ok && in.ToolCall > 0 {
				if env.ToolCall != in.ToolCall {
					t.Errorf("record %d: %s, want tool_call %d", r.Seq, data, in.ToolCall)
				}
				withResult := slices.ContainsFunc(batch[:i], func(r polyloop.Row) bool {
					res, ok := r.Record.Body.(*polyloop.ModelCallResult)
					return ok && res.CallID == in.ModelCallID
				})
				switch {
				case withResult && env.Action == nil:
					want, refs = 2, refs+1
				case withResult || env.Action == nil:
					t.Errorf("record %d: %s: with its model result in the batch %v, yet action %v", r.Seq, data, withResult, env.Action)
				default:
					copies++
				}
			}
			if env.V != want {
				t.Errorf("record %d (%s) has v %d, want %d: %s", r.Seq, r.Kind(), env.V, want, data)
			}
		}
	}
	if refs != 10 || copies != 1 {
		t.Fatalf("the reference run has %d intents referring to their tool calls and %d copies, want 10 and 1", refs, copies)
	}
}

// batchRecorder is a store that keeps the rows of each Append. It is no
// RecordKeeper, whatever it wraps: its rows hold their bytes.
type batchRecorder struct {
	polyloop.Store
	batches [][]polyloop.Row
}

func (s *batchRecorder) Append(ctx context.Context, runID string, records []polyloop.Row) error {
	kept := slices.Clone(records) // a store retains no row nor its bytes
	for i := range kept {
		kept[i].Data = slices.Clone(kept[i].Data)
	}
	s.batches = append(s.batches, kept)
	return s.Store.Append(ctx, runID, records)
}

// A log written in format 1.2 (intents refer to their tool call) still
// reads, plans, totals and resumes from every one of its prefixes: it is the
// run a run started today is, with the same history.
func TestLogFormat12StillResumes(t *testing.T) {
	old := readJSONL(t, "testdata/logs/v1.2-reference.jsonl")
	if v := old.Started().LogVersion; v != "1.2" {
		t.Fatalf("the stored 1.2 log has log_version %q", v)
	}
	plan, err := polyloop.PlanResume(old)
	if err != nil || plan.Action != polyloop.PlanAlreadyFinished {
		t.Fatalf("plan of the finished 1.2 log: %+v, %v", plan, err)
	}
	if got, want := polyloop.ComputeTotals(old), old.Finished().Totals; got != want {
		t.Fatalf("totals of the 1.2 log %+v, its run_finished says %+v", got, want)
	}
	todayLog := referenceLog(t)
	if err := polylooptest.CheckEquivalent(old, todayLog); err != nil {
		t.Fatalf("the 1.2 log is not the run a run started today is: %v", err)
	}
	today := polyloop.History(todayLog)
	if h := polyloop.History(old); !reflect.DeepEqual(h, today) {
		t.Fatalf("history of the 1.2 log differs from a run started today:\n%s", historyDiff(h, today))
	}
	resumeEveryPrefix(t, old, func(k int, got polyloop.RunLog) {
		if h := polyloop.History(got); !reflect.DeepEqual(h, today) {
			t.Fatalf("prefix %d: history after resuming differs from a run started today:\n%s", k, historyDiff(h, today))
		}
	})
}
