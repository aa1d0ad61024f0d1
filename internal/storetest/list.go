package storetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// listFixture is a set of runs that differ in every field a filter reads.
type listFixture struct {
	ids  []string
	logs map[string][]polyloop.Record
	t    []time.Time // start time of each run
}

func newListFixture(t *testing.T) listFixture {
	f := listFixture{logs: map[string][]polyloop.Record{}}
	agents := []string{"alpha", "beta", "alpha", "beta"}
	for i, agent := range agents {
		id := runName(t, string(rune('a'+i)))
		recs := []polyloop.Record{Started(id, agent), Intent(1, 1)}
		switch i {
		case 1:
			recs = append(recs, Finished(2, polyloop.StopCompleted, 0))
		case 2:
			st := recs[0].Body.(*polyloop.RunStarted)
			st.Parent = &polyloop.ParentRef{RunID: f.ids[0], Step: 1}
			snap := st.Snapshot
			snap.System = "changed"
			h, _ := snap.Hash()
			recs = append(recs,
				polyloop.Record{Seq: 2, At: At(2), Body: &polyloop.ConfigOverride{PreviousHash: st.SnapshotHash, SnapshotHash: h, Fields: []string{"system"}, Snapshot: snap}},
				Finished(3, polyloop.StopMaxSteps, 0))
		case 3:
			recs = append(recs, Finished(2, polyloop.StopLLMError, 0))
		}
		start := base.Add(time.Duration(i) * time.Hour)
		for j := range recs {
			recs[j].At = start.Add(time.Duration(j) * time.Second)
		}
		f.ids = append(f.ids, id)
		f.logs[id] = recs
		f.t = append(f.t, start)
	}
	return f
}

func (f listFixture) summary(id string) polyloop.RunSummary {
	var s polyloop.RunSummary
	for _, r := range f.logs[id] {
		s.Apply(r)
	}
	return s
}

// testListRuns lists with the filters polylooptest's ListRuns check lacks:
// its runs share one agent and are never filtered by snapshot hash or by
// several conditions at once.
func testListRuns(t *testing.T, ctx context.Context, s polyloop.Store) {
	lister, ok := s.(polyloop.RunLister)
	if !ok {
		t.Skip("store does not implement polyloop.RunLister")
	}
	f := newListFixture(t)
	for _, id := range f.ids {
		recs := f.logs[id]
		mustAppend(t, ctx, s, id, recs[:2]...) // the summary must fold several Appends
		if len(recs) > 2 {
			mustAppend(t, ctx, s, id, recs[2:]...)
		}
	}
	yes := true
	hashC := f.summary(f.ids[2]).SnapshotHash
	cases := []struct {
		name   string
		filter polyloop.RunFilter
		want   []int
	}{
		{"agent", polyloop.RunFilter{Agent: "alpha"}, []int{0, 2}},
		{"snapshot", polyloop.RunFilter{SnapshotHash: f.summary(f.ids[1]).SnapshotHash}, []int{1}},
		{"overridden snapshot", polyloop.RunFilter{SnapshotHash: hashC}, []int{2}},
		{"time range", polyloop.RunFilter{StartedAfter: f.t[1], StartedBefore: f.t[3]}, []int{1, 2}},
		{"combined", polyloop.RunFilter{Agent: "beta", Finished: &yes, StopReason: polyloop.StopLLMError}, []int{3}},
		{"task", polyloop.RunFilter{TaskContains: "task of " + f.ids[2]}, []int{2}},
		{"task and agent", polyloop.RunFilter{TaskContains: "task of", Agent: "beta"}, []int{1, 3}},
		{"task, case-sensitive", polyloop.RunFilter{TaskContains: "TASK OF"}, nil},
	}
	for _, tc := range cases {
		got, err := lister.ListRuns(ctx, tc.filter)
		if err != nil {
			t.Fatalf("%s: ListRuns: %v", tc.name, err)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("%s: %d runs, want %d: %+v", tc.name, len(got), len(tc.want), got)
		}
		for i, w := range tc.want {
			sameSummary(t, tc.name, got[i], f.summary(f.ids[w]))
		}
	}
}

func sameSummary(t testing.TB, name string, got, want polyloop.RunSummary) {
	t.Helper()
	if !got.StartedAt.Equal(want.StartedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Fatalf("%s: run %s times %v/%v, want %v/%v", name, got.RunID, got.StartedAt, got.UpdatedAt, want.StartedAt, want.UpdatedAt)
	}
	got.StartedAt, got.UpdatedAt = want.StartedAt, want.UpdatedAt
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: summary\n got  %+v\n want %+v", name, got, want)
	}
}
