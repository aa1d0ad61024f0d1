package polylooptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/polyloop/polyloop"
)

// This file holds correct implementations of the five seams: the suites
// must pass them. broken_test.go breaks them one behaviour at a time.

// goodModel answers every request, honouring its context.
type goodModel struct{}

func (goodModel) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	if err := ctx.Err(); err != nil {
		return polyloop.ModelReply{}, fmt.Errorf("goodModel: %w", err)
	}
	return polyloop.ModelReply{Text: "hello", Usage: polyloop.Usage{InputTokens: 12, OutputTokens: 1}, Model: "good-1", Attempts: 1}, nil
}

func goodModelHarness() ModelClientHarness {
	return ModelClientHarness{
		New: func(testing.TB) polyloop.ModelClient { return goodModel{} },
		Failing: map[string]func(testing.TB) polyloop.ModelClient{
			"injected": func(testing.TB) polyloop.ModelClient { return &FaultyModel{Model: goodModel{}, FailOn: 1} },
		},
		NewHanging: func(testing.TB) polyloop.ModelClient { return &HangingModel{} },
		Refusing: map[string]RefusedReply{
			"arguments not JSON": {New: func(testing.TB) polyloop.ModelClient { return refusingModel{carries: true} }, Usage: refusedUsage()},
		},
	}
}

// refusedUsage is what refusingModel's refused reply reports.
func refusedUsage() polyloop.Usage {
	cost := 0.0042
	return polyloop.Usage{InputTokens: 120, OutputTokens: 7, CostUSD: &cost}
}

// refusingModel receives a reply it cannot accept: its error carries the
// reply's usage when carries is set, else nothing (a broken client), or the
// wrong usage when wrong is set.
type refusingModel struct{ carries, wrong, noCost bool }

// refusedError is the error of a refused reply, with its usage.
type refusedError struct{ u polyloop.Usage }

func (refusedError) Error() string               { return "refusingModel: the reply's arguments are not JSON" }
func (e refusedError) CallUsage() polyloop.Usage { return e.u }

func (m refusingModel) Complete(ctx context.Context, _ polyloop.ModelRequest) (polyloop.ModelReply, error) {
	if err := ctx.Err(); err != nil {
		return polyloop.ModelReply{}, err
	}
	u := refusedUsage()
	switch {
	case !m.carries:
		return polyloop.ModelReply{}, errors.New("refusingModel: the reply's arguments are not JSON")
	case m.wrong:
		u.InputTokens = 0
	case m.noCost:
		u.CostUSD = nil
	}
	return polyloop.ModelReply{}, fmt.Errorf("wrapped: %w", refusedError{u})
}

// goodParser: the tool calls of a reply are an Act of one action each,
// unless one is malformed (Invalid); more than goodParserMaxCalls is
// Invalid; text alone is Final, nothing at all Invalid.
type goodParser struct{}

const goodParserMaxCalls = 8

func (goodParser) Parse(r polyloop.ModelReply) polyloop.Decision {
	switch {
	case len(r.ToolCalls) > goodParserMaxCalls:
		return polyloop.Invalid{Feedback: fmt.Sprintf("%d tool calls; call at most %d tools at a time", len(r.ToolCalls), goodParserMaxCalls)}
	case len(r.ToolCalls) > 0:
		return goodCalls(r.ToolCalls)
	case strings.TrimSpace(r.Text) == "":
		return polyloop.Invalid{Feedback: "empty reply: no action and no answer"}
	}
	return polyloop.Final{Answer: r.Text}
}

func goodCalls(calls []polyloop.ToolCall) polyloop.Decision {
	var act polyloop.Act
	for i, tc := range calls {
		if tc.Name == "" {
			return polyloop.Invalid{Feedback: fmt.Sprintf("tool call %d has no name", i+1)}
		}
		if len(tc.Args) > 0 && !json.Valid(tc.Args) {
			return polyloop.Invalid{Feedback: fmt.Sprintf("the arguments of tool call %d are not valid JSON", i+1)}
		}
		act.Actions = append(act.Actions, polyloop.Action{CallID: tc.ID, Tool: tc.Name, Args: tc.Args})
	}
	return act
}

func goodParserHarness() ParserHarness {
	return ParserHarness{
		New: func(testing.TB) polyloop.DecisionParser { return goodParser{} },
		Corpus: []ParserCase{
			want(calls("one call", "", call("c1", "search", `{"q":"go"}`)), polyloop.DecisionAct),
			want(text("answer", "The answer is 42."), polyloop.DecisionFinal),
			want(calls("two calls", "", call("c1", "a", `{}`), call("c2", "b", `{}`)), polyloop.DecisionAct),
			want(calls("two calls, one malformed", "", call("c1", "a", `{}`), call("c2", "b", `{`)), polyloop.DecisionInvalid),
		},
		Generated: 120,
	}
}

func want(c ParserCase, k polyloop.DecisionKind) ParserCase {
	c.Want = k
	return c
}

// goodExecutor has the tools echo (runs), fail (runs and fails) and sleep
// (blocks until cancelled); echo wants an object.
type goodExecutor struct{ broken bool }

func (x goodExecutor) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	if err := ctx.Err(); err != nil {
		return polyloop.ActionOutcome{}, fmt.Errorf("goodExecutor: %w", err)
	}
	if x.broken {
		return polyloop.ActionOutcome{Status: polyloop.EnvError, Observation: "connection refused"}, nil
	}
	switch a.Tool {
	case "echo":
		var args map[string]any
		if err := json.Unmarshal(a.Args, &args); err != nil {
			return polyloop.ActionOutcome{Status: polyloop.NotExecuted, Observation: "echo wants an object"}, nil
		}
		return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: string(a.Args)}, nil
	case "fail":
		return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "exit status 1"}, nil
	case "sleep":
		<-ctx.Done()
		return polyloop.ActionOutcome{}, fmt.Errorf("goodExecutor: sleep: %w", ctx.Err())
	}
	return polyloop.ActionOutcome{Status: polyloop.NotExecuted, Observation: "no tool " + a.Tool}, nil
}

func goodExecutorHarness() ExecutorHarness {
	return ExecutorHarness{
		New:          func(testing.TB) polyloop.ActionExecutor { return goodExecutor{} },
		Succeeds:     polyloop.Action{Tool: "echo", Args: json.RawMessage(`{"x":1}`)},
		Fails:        polyloop.Action{Tool: "fail", Args: json.RawMessage(`{}`)},
		InvalidArgs:  polyloop.Action{Tool: "echo", Args: json.RawMessage(`[1]`)},
		Blocks:       polyloop.Action{Tool: "sleep", Args: json.RawMessage(`{}`)},
		NoLeftovers:  func(testing.TB) error { return nil },
		NewBrokenEnv: func(testing.TB) polyloop.ActionExecutor { return goodExecutor{broken: true} },
	}
}

// backing is the "disk" of goodStore: rows and summaries per run.
type backing struct {
	mu   sync.Mutex
	runs map[string][]polyloop.Row
	sums map[string]polyloop.RunSummary
}

// goodStore keeps rows in a backing shared by reopened stores. armed makes
// the next Append fail after its first row.
type goodStore struct {
	b     *backing
	armed bool
}

func newGoodStore() *goodStore {
	return &goodStore{b: &backing{runs: map[string][]polyloop.Row{}, sums: map[string]polyloop.RunSummary{}}}
}

func (s *goodStore) Append(ctx context.Context, runID string, rows []polyloop.Row) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	log := s.b.runs[runID]
	if rows[0].Seq != int64(len(log)) {
		return fmt.Errorf("goodStore: seq %d, next is %d: %w", rows[0].Seq, len(log), polyloop.ErrSeqConflict)
	}
	staged := slices.Clone(log)
	sum := s.b.sums[runID]
	sum.RunID = runID
	for i, r := range rows {
		if s.armed && i == 1 {
			s.armed = false
			return errors.New("goodStore: injected failure")
		}
		r.Data = slices.Clone(r.Data)
		staged = append(staged, r)
		sum.Apply(r.Record)
	}
	s.b.runs[runID], s.b.sums[runID] = staged, sum
	return nil
}

func (s *goodStore) ReadRows(ctx context.Context, runID string) ([]polyloop.Row, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	return slices.Clone(s.b.runs[runID]), nil
}

func (s *goodStore) ReadRowsFrom(ctx context.Context, runID string, from int64, limit int) ([]polyloop.Row, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	rows := s.b.runs[runID]
	from = min(from, int64(len(rows)))
	return slices.Clone(rows[from:min(from+int64(limit), int64(len(rows)))]), nil
}

// goodKeeper is a RecordKeeper: it keeps the rows' records, not their
// bytes.
type goodKeeper struct{ goodStore }

func (*goodKeeper) KeepsRecords() {}

func (s *goodKeeper) Append(ctx context.Context, runID string, rows []polyloop.Row) error {
	rows = slices.Clone(rows)
	for i := range rows {
		rows[i].Data, rows[i].Checksum = nil, 0
	}
	return s.goodStore.Append(ctx, runID, rows)
}

func (s *goodStore) ListRuns(ctx context.Context, f polyloop.RunFilter) ([]polyloop.RunSummary, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []polyloop.RunSummary
	s.b.mu.Lock()
	for _, sum := range s.b.sums {
		if f.Matches(sum) {
			out = append(out, sum)
		}
	}
	s.b.mu.Unlock()
	slices.SortFunc(out, func(a, b polyloop.RunSummary) int {
		if c := a.StartedAt.Compare(b.StartedAt); c != 0 {
			return c // a run without RunStarted has the zero time: first
		}
		return strings.Compare(a.RunID, b.RunID)
	})
	if f.Descending {
		slices.Reverse(out)
	}
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

func goodStoreHarness() StoreHarness {
	return StoreHarness{
		New: func(testing.TB) polyloop.Store { return newGoodStore() },
		NewFaulty: func(testing.TB) (polyloop.Store, func()) {
			s := newGoodStore()
			return s, func() { s.armed = true }
		},
		Reopen: func(_ testing.TB, s polyloop.Store) polyloop.Store {
			return &goodStore{b: s.(*goodStore).b}
		},
		LargeBody: 64 << 10,
	}
}

// goodSink keeps encoded events; failing makes every Emit fail.
type goodSink struct {
	mu      sync.Mutex
	lines   [][]byte
	failing bool
}

func (s *goodSink) Emit(ctx context.Context, ev polyloop.Event) error {
	if s.failing {
		return errors.New("goodSink: disk full")
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = append(s.lines, b)
	return nil
}

func goodSinkHarness() SinkHarness {
	return SinkHarness{
		New:        func(testing.TB) polyloop.EventSink { return &goodSink{} },
		NewFailing: func(testing.TB) polyloop.EventSink { return &goodSink{failing: true} },
		Verify: func(_ testing.TB, sink polyloop.EventSink, evs []polyloop.Event) error {
			if n := len(sink.(*goodSink).lines); n != len(evs) {
				return fmt.Errorf("%d lines for %d events", n, len(evs))
			}
			return nil
		},
	}
}

// goodSharer is a SnapshotKeeper: it keeps each row's shared snapshot
// with it (a copy).
type goodSharer struct{ goodStore }

func (*goodSharer) SharesSnapshots() {}

func (s *goodSharer) Append(ctx context.Context, runID string, rows []polyloop.Row) error {
	rows = slices.Clone(rows)
	for i := range rows {
		if sh := rows[i].Shared; sh != nil {
			rows[i].Shared = &polyloop.SharedSnapshot{Ref: sh.Ref, Data: slices.Clone(sh.Data)}
		}
	}
	return s.goodStore.Append(ctx, runID, rows)
}
