package sweep

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
)

// The samples table holds every attempt the store holds, each with what
// its log and its scores say; its agent hash is the agent configuration
// hash of the run's snapshot.
func TestSamplesEqualTheStore(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	m := &faultModel{fail: func(task string, epoch, attempt int) bool { return task == "t2" && attempt == 1 },
		wrong: func(task string) bool { return task == "t3" }}
	s, err := New(Definition{Name: "smp", Agents: []*Agent{testAgent("a", m), testAgent("b", m)}, Tasks: numberTasks(3), Epochs: 2,
		Retry:   RetryPolicy{Backoff: 1, MaxBackoff: 1},
		Scorers: []Scorer{Exact("exact", MatchOptions{}), Numeric("near", NumericOptions{Tolerance: 5})}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(ctx, RunOptions{Store: store}); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSamples(ctx, store, "smp", SampleQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Rows) != 16 { // 2 agents × 3 tasks × 2 epochs, t2's four coordinates twice
		t.Fatalf("%d rows, want 16", len(got.Rows))
	}
	if len(got.Scorers) != 2 || got.Scorers[0] != "exact" || got.Scorers[1] != "near" {
		t.Fatalf("scorers %v", got.Scorers)
	}
	for _, r := range got.Rows {
		checkSample(t, store, r)
	}
}

// checkSample compares a row with the run's log and ledger state.
func checkSample(t *testing.T, store *memstore.Store, r Sample) {
	t.Helper()
	ctx := context.Background()
	states, err := store.Runs(ctx, []string{r.RunID})
	if err != nil || len(states) != 1 {
		t.Fatalf("%s: %v", r.RunID, err)
	}
	st := states[0]
	log, err := polyloop.ReadLog(ctx, store, r.RunID)
	if err != nil {
		t.Fatal(err)
	}
	fin := log.Finished()
	agentHash, _ := log.Started().Snapshot.AgentHash()
	want := Sample{RunID: st.RunID, Agent: st.Agent, AgentHash: agentHash, SnapshotHash: log.Started().SnapshotHash, Task: st.TaskID,
		Epoch: st.Epoch, Attempt: st.Attempt, Status: SampleFinished, StopReason: fin.StopReason, Steps: fin.Totals.Steps,
		Tokens: fin.Totals.Tokens(), CostUSD: fin.Totals.CostUSD, CostUnknown: fin.Totals.CostUnknown,
		Last: st.Attempt == 2 || st.TaskID != "t2", StartedAt: log.Records[0].At, Duration: log.Records[len(log.Records)-1].At.Sub(log.Records[0].At)}
	if agentHash != st.AgentHash {
		t.Errorf("%s: the run's agent configuration hash %s, the ledger's agent hash %s", r.RunID, agentHash, st.AgentHash)
	}
	if r.Scores == nil || len(r.Scores) != len(st.Scores) {
		t.Errorf("%s: scores %v, the store has %v", r.RunID, r.Scores, st.Scores)
	}
	for _, sc := range st.Scores {
		if g := r.Scores[sc.Scorer]; g.Value != sc.Value || g.Explanation != sc.Explanation {
			t.Errorf("%s: %s score %+v, the store has %+v", r.RunID, sc.Scorer, g, sc)
		}
	}
	r.Scores = nil
	if !r.StartedAt.Equal(want.StartedAt) {
		t.Errorf("%s: started at %s, want %s", r.RunID, r.StartedAt, want.StartedAt)
	}
	r.StartedAt = want.StartedAt
	if !reflect.DeepEqual(r, want) {
		t.Errorf("row\n%+v\nwant\n%+v", r, want)
	}
	if fin.StopReason == polyloop.StopLLMError && len(st.Scores) != 0 {
		t.Errorf("%s: a retried stop reason scored", r.RunID)
	}
}

// The queries of a samples table, on a hand-made sweep:
//
//	a t1 e1 completed 1   a t1 e2 completed 0.5   a t2 e1 env_error 0
//	b t1 e1 llm_error, then completed 0.25        b t2 e1 unfinished
func TestSampleQueries(t *testing.T) {
	store := handStore(t, "q", []string{"a", "b"}, 2, []handRun{
		{agent: "a", task: "t1", epoch: 1, stops: []polyloop.StopReason{polyloop.StopCompleted}, score: score(1), cost: 0.3},
		{agent: "a", task: "t1", epoch: 2, stops: []polyloop.StopReason{polyloop.StopCompleted}, score: score(0.5), explanation: "half", cost: 0.1},
		{agent: "a", task: "t2", epoch: 1, stops: []polyloop.StopReason{polyloop.StopEnvError}, score: score(0), explanation: "no answer", cost: 0.2},
		{agent: "b", task: "t1", epoch: 1, stops: []polyloop.StopReason{polyloop.StopLLMError, polyloop.StopCompleted}, score: score(0.25), cost: 0.4},
		{agent: "b", task: "t2", epoch: 1, stops: []polyloop.StopReason{""}},
	})
	ids := func(q SampleQuery) []string {
		t.Helper()
		s, err := ReadSamples(context.Background(), store, "q", q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range s.Rows {
			out = append(out, r.Agent+"."+r.Task+".e"+string(rune('0'+r.Epoch))+".a"+string(rune('0'+r.Attempt)))
		}
		return out
	}
	below := 0.6
	for _, c := range []struct {
		name string
		q    SampleQuery
		want []string
	}{
		{"failed", SampleQuery{Failed: true}, []string{"a.t1.e2.a1", "a.t2.e1.a1", "b.t1.e1.a1", "b.t1.e1.a2"}},
		{"below", SampleQuery{Below: &below}, []string{"a.t1.e2.a1", "a.t2.e1.a1", "b.t1.e1.a2"}},
		{"agent", SampleQuery{Agent: "b"}, []string{"b.t1.e1.a1", "b.t1.e1.a2", "b.t2.e1.a1"}},
		{"descending", SampleQuery{Agent: "b", Desc: true}, []string{"b.t2.e1.a1", "b.t1.e1.a2", "b.t1.e1.a1"}},
		{"task, by score", SampleQuery{Task: "t1", Sort: "score"}, []string{"b.t1.e1.a2", "a.t1.e2.a1", "a.t1.e1.a1", "b.t1.e1.a1"}},
		{"by score, descending", SampleQuery{Sort: "score", Desc: true}, []string{"a.t1.e1.a1", "a.t1.e2.a1", "b.t1.e1.a2", "a.t2.e1.a1", "b.t1.e1.a1", "b.t2.e1.a1"}},
		{"by cost", SampleQuery{Sort: "cost", Agent: "a"}, []string{"a.t1.e2.a1", "a.t2.e1.a1", "a.t1.e1.a1"}},
	} {
		got := ids(c.q)
		if len(got) != len(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: %v, want %v", c.name, got, c.want)
				break
			}
		}
	}
	s, err := ReadSamples(context.Background(), store, "q", SampleQuery{Agent: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if r := s.Rows[0]; r.Last || r.StopReason != polyloop.StopLLMError || len(r.Scores) != 0 {
		t.Errorf("a retried attempt: %+v", r)
	}
	if r := s.Rows[2]; r.Status != SampleUnfinished || r.StopReason != "" || !r.Last {
		t.Errorf("an unfinished run: %+v", r)
	}
	for _, bad := range []SampleQuery{{Scorer: "nope"}, {Sort: "colour"}} {
		if _, err := ReadSamples(context.Background(), store, "q", bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// A window of the samples (Offset, Limit: a viewer's page) is the slice
// of the whole table, for every order; reading it holds at most
// 2×(Offset+Limit)+windowSlack rows at once, however large the sweep.
func TestSampleWindowIsBounded(t *testing.T) {
	var runs []handRun
	for i := 0; i < 1250; i++ {
		stops := []polyloop.StopReason{polyloop.StopCompleted}
		if i%7 == 0 {
			stops = []polyloop.StopReason{polyloop.StopLLMError, polyloop.StopCompleted}
		}
		runs = append(runs, handRun{agent: []string{"a", "b"}[i%2], task: fmt.Sprintf("t%04d", i/2), epoch: 1, stops: stops,
			score: score(float64(i%5) / 4), cost: float64(i%11) / 10})
	}
	store := handStore(t, "w", []string{"a", "b"}, 1, runs)
	ctx := context.Background()
	for _, q := range []SampleQuery{{}, {Sort: "score"}, {Sort: "cost", Desc: true}, {Agent: "b", Sort: "task"}, {Failed: true, Sort: "score", Desc: true}} {
		all, err := ReadSamples(ctx, store, "w", q)
		if err != nil {
			t.Fatal(err)
		}
		if all.Total != len(all.Rows) {
			t.Errorf("%+v: total %d, %d rows", q, all.Total, len(all.Rows))
		}
		for _, w := range [][2]int{{0, 20}, {40, 20}, {all.Total - 5, 20}, {all.Total + 3, 20}} {
			q := q
			q.Offset, q.Limit = w[0], w[1]
			held := 0
			heldSamples = func(n int) { held = max(held, n) }
			got, err := ReadSamples(ctx, store, "w", q)
			heldSamples = func(int) {}
			if err != nil {
				t.Fatal(err)
			}
			want := all.Rows[min(w[0], len(all.Rows)):min(w[0]+w[1], len(all.Rows))]
			if got.Total != all.Total || !reflect.DeepEqual(sampleIDs(got.Rows), sampleIDs(want)) || !reflect.DeepEqual(lasts(got.Rows), lasts(want)) {
				t.Errorf("%+v: total %d rows %v, want %d %v", q, got.Total, sampleIDs(got.Rows), all.Total, sampleIDs(want))
			}
			if bound := 2*(w[0]+w[1]) + windowSlack; held > bound {
				t.Errorf("%+v: held %d rows at once, bound %d (of %d)", q, held, bound, all.Total)
			}
		}
	}
}

func sampleIDs(rows []Sample) []string {
	out := []string{}
	for _, r := range rows {
		out = append(out, r.RunID)
	}
	return out
}

func lasts(rows []Sample) []bool {
	out := []bool{}
	for _, r := range rows {
		out = append(out, r.Last)
	}
	return out
}

// A coordinate's last attempt is its highest, though the ledger lists its
// run ids in string order (".a10" before ".a2").
func TestSampleLastOfTenAttempts(t *testing.T) {
	stops := make([]polyloop.StopReason, 11)
	for i := range stops {
		stops[i] = polyloop.StopLLMError
	}
	stops[10] = polyloop.StopCompleted
	store := handStore(t, "w", []string{"a"}, 1, []handRun{{agent: "a", task: "t1", epoch: 1, stops: stops, score: score(1)}})
	got, err := ReadSamples(context.Background(), store, "w", SampleQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range got.Rows {
		if r.Last != (r.Attempt == 11) {
			t.Errorf("attempt %d: last %v", r.Attempt, r.Last)
		}
	}
	if len(got.Rows) != 11 {
		t.Fatalf("%d rows, want 11", len(got.Rows))
	}
}
