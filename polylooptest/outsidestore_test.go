package polylooptest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/polylooptest"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/toolcallparser"
)

// mapStore is a store written from the Store doc comment alone, as an
// adapter's author outside this module would write it: a map of rows. It
// keeps rows and checks the first seq; everything else about the log —
// encoding, limits, checksums, decoding, tool-call references — is the
// Runner's.
type mapStore struct {
	mu   sync.Mutex
	runs map[string][]polyloop.Row
}

func (s *mapStore) Append(ctx context.Context, runID string, rows []polyloop.Row) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if next := int64(len(s.runs[runID])); rows[0].Seq != next {
		return fmt.Errorf("mapStore: run %q: seq %d, next is %d: %w", runID, rows[0].Seq, next, polyloop.ErrSeqConflict)
	}
	if s.runs == nil {
		s.runs = map[string][]polyloop.Row{}
	}
	for _, r := range rows {
		r.Data = slices.Clone(r.Data) // the caller reuses the rows after Append
		s.runs[runID] = append(s.runs[runID], r)
	}
	return nil
}

// echo executes every action.
type echo struct{}

func (echo) Execute(context.Context, polyloop.Action) (polyloop.ActionOutcome, error) {
	return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "ok"}, nil
}

func (s *mapStore) ReadRows(ctx context.Context, runID string) ([]polyloop.Row, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.runs[runID]), nil
}

func (s *mapStore) ReadRowsFrom(ctx context.Context, runID string, from int64, limit int) ([]polyloop.Row, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rows := s.runs[runID]
	if from >= int64(len(rows)) {
		return nil, nil
	}
	return slices.Clone(rows[from:min(from+int64(limit), int64(len(rows)))]), nil
}

// TestOutsideStorePassesTheKit: a store that only keeps rows honours the
// Store contract.
func TestOutsideStorePassesTheKit(t *testing.T) {
	polylooptest.TestStore(t, polylooptest.StoreHarness{
		New:  func(testing.TB) polyloop.Store { return &mapStore{} },
		Skip: map[string]string{"Reopen": "a map keeps nothing across a restart"},
	})
}

// TestOutsideStoreRunsAndResumes: on such a store a run is stopped by a
// crash mid-log and resumed to the end; the log reads back through the
// Runner's reader with its tool calls resolved, and a record beyond the
// log's limits is refused before the store sees it.
func TestOutsideStoreRunsAndResumes(t *testing.T) {
	ctx := context.Background()
	store := &mapStore{}
	model := scriptmodel.New(scriptmodel.Call("c1", "echo", map[string]int{"i": 1}), scriptmodel.Call("c2", "echo", map[string]int{"i": 1}),
		scriptmodel.Reply("done"))
	agent := polyloop.Agent{Name: "a", Tools: []polyloop.ToolSpec{{Name: "echo", Replay: polyloop.ReplaySafe}}}
	var exec echo
	crashing := &polylooptest.FaultyStore{Store: store, CrashAfter: 5}
	r := &polyloop.Runner{Model: model, Parser: toolcallparser.New(toolcallparser.Options{}), Executor: exec, Store: crashing}
	if _, err := r.Run(ctx, "o", agent, polyloop.Task{Input: "go"}); err == nil {
		t.Fatal("the crashing store let the run finish")
	}
	r.Store = store
	res, err := r.Resume(ctx, "o", agent)
	if err != nil || res.StopReason != polyloop.StopCompleted || res.Totals.Steps != 3 {
		t.Fatalf("resume on the outside store: %+v, %v", res, err)
	}
	log, err := polyloop.ReadLog(ctx, store, "o")
	if err != nil {
		t.Fatal(err)
	}
	intents := log.ActionIntents()
	if len(intents) != 3 || intents[1].Attempt != 2 { // step 1's action, replayed after the crash
		t.Fatalf("%d intents read back, want 3 (the action of step 1 replayed)", len(intents))
	}
	for _, in := range intents {
		if a := in.Action; in.ToolCall != 1 || a.CallID != fmt.Sprintf("c%d", in.Step) || a.Tool != "echo" || string(a.Args) != `{"i":1}` {
			t.Fatalf("intent %s read back with action %+v (tool call %d), want the tool call it refers to", in.ActionID, a, in.ToolCall)
		}
	}
	for _, row := range store.runs["o"] {
		if row.Unchecked || len(row.Data) == 0 {
			t.Fatalf("row %d kept without bytes or checksum: %+v", row.Seq, row)
		}
	}
	big := polyloop.Record{Seq: int64(len(log.Records)), At: log.Records[0].At, Body: &polyloop.ChildReception{Step: 1, ChildRunID: "x",
		Reception: polyloop.ReceptionHandled, Value: json.RawMessage("[\"\xff\"]")}}
	before := len(store.runs["o"])
	if err := polyloop.AppendRecords(ctx, store, "o", big); err == nil || len(store.runs["o"]) != before {
		t.Fatalf("a record beyond the limits (invalid UTF-8): %v, %d rows (was %d); want it refused before the store", err, len(store.runs["o"]), before)
	}
}
