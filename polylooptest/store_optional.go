package polylooptest

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/polyloop/polyloop"
)

func checkStoreReopen(e *env, h StoreHarness) error {
	if h.Reopen == nil {
		return skipf("the harness gives no Reopen, so a restart cannot be simulated")
	}
	s, run := h.New(e.t), "polylooptest-reopen"
	recs := records(0, sampleBodies(run, 4096)...)
	if err := appendOK(e.ctx, s, run, recs[:4]...); err != nil {
		return err
	}
	if err := appendOK(e.ctx, s, run, recs[4:6]...); err != nil {
		return err
	}
	s = h.Reopen(e.t, s)
	if err := expectLog(e.ctx, s, run, recs[:6]); err != nil {
		return fmt.Errorf("after Reopen: %w", err)
	}
	if err := conflict(e.ctx, s, run, "seq 5 again after Reopen", recs[:6], intents(5, 1, "x")...); err != nil {
		return err
	}
	if err := appendOK(e.ctx, s, run, recs[6:]...); err != nil {
		return fmt.Errorf("after Reopen: %w", err)
	}
	return expectLog(e.ctx, s, run, recs)
}

// listedRun is a run the ListRuns check writes.
type listedRun struct {
	id      string
	records []polyloop.Record
}

// listedRuns are a finished run, an unfinished one and a child, started a
// second apart, in an order that differs from their ids' order.
func listedRuns() []listedRun {
	mk := func(id string, start int, parent string, finish bool) listedRun {
		bodies := sampleBodies(id, 256)
		started := bodies[0].(*polyloop.RunStarted)
		started.Parent = nil
		if parent != "" {
			started.Parent = &polyloop.ParentRef{RunID: parent, Step: 1, Index: 0}
		}
		if !finish {
			bodies = bodies[:5]
		}
		recs := records(0, bodies...)
		for i := range recs {
			recs[i].At = recs[i].At.Add(time.Duration(start) * time.Second)
		}
		return listedRun{id: id, records: recs}
	}
	return []listedRun{
		mk("polylooptest-list-c", 0, "", true),
		mk("polylooptest-list-a", 1, "", false),
		mk("polylooptest-list-b", 2, "polylooptest-list-c", true),
	}
}

func checkStoreListRuns(e *env, h StoreHarness) error {
	s := h.New(e.t)
	lister, ok := s.(polyloop.RunLister)
	if !ok {
		return skipf("the store (%T) does not implement polyloop.RunLister", s)
	}
	runs := listedRuns()
	var all []polyloop.RunSummary
	for _, r := range runs {
		if err := appendOK(e.ctx, s, r.id, r.records...); err != nil {
			return err
		}
		var sum polyloop.RunSummary
		for _, rec := range r.records {
			sum.Apply(rec)
		}
		all = append(all, sum)
	}
	finished, unfinished := true, false
	filters := []polyloop.RunFilter{
		{},
		{Finished: &finished},
		{Finished: &unfinished},
		{ParentRunID: runs[0].id},
		{StopReason: polyloop.StopEnvError},
		{StartedAfter: runs[1].records[0].At},
		{StartedBefore: runs[1].records[0].At},
		{Agent: "polylooptest-agent", Limit: 2},
		{Agent: "no-such-agent"},
	}
	for _, f := range filters {
		if err := expectListing(e, lister, f, all); err != nil {
			return err
		}
	}
	return nil
}

// expectListing lists with f and compares with the summaries of all that
// f matches, in start order, cut to f.Limit.
func expectListing(e *env, lister polyloop.RunLister, f polyloop.RunFilter, all []polyloop.RunSummary) error {
	want := []polyloop.RunSummary{}
	for _, s := range all {
		if f.Matches(s) {
			want = append(want, s)
		}
	}
	if f.Limit > 0 && len(want) > f.Limit {
		want = want[:f.Limit]
	}
	got, err := lister.ListRuns(e.ctx, f)
	if err != nil {
		return fmt.Errorf("ListRuns(%s) failed: %w", cutJSON(f), err)
	}
	w, _ := json.Marshal(utcSummaries(want))
	g, _ := json.Marshal(utcSummaries(got))
	if string(w) != string(g) {
		return fmt.Errorf("ListRuns(%s): the summaries differ from those RunSummary.Apply folds from the records, filtered and in start order: %s", cutJSON(f), firstDiff(w, g))
	}
	return nil
}

// utcSummaries puts the summaries' times in UTC, so that their encodings
// compare the instants and not the zones.
func utcSummaries(in []polyloop.RunSummary) []polyloop.RunSummary {
	out := make([]polyloop.RunSummary, len(in))
	for i, s := range in {
		s.StartedAt, s.UpdatedAt = s.StartedAt.UTC(), s.UpdatedAt.UTC()
		out[i] = s
	}
	return out
}
