package polylooptest

import (
	"slices"
	"strings"
	"time"

	"github.com/polyloop/polyloop"
)

// checkStoreListPages lists orderedRuns in the reverse order (Descending)
// and page by page (After, the keyset cursor), in both orders and with
// several page sizes, and after a position that is no run's.
func checkStoreListPages(e *env, h StoreHarness) error {
	lister, all, err := orderedLister(e, h)
	if err != nil {
		return err
	}
	slices.SortFunc(all, listingOrder)
	desc := slices.Clone(all)
	slices.Reverse(desc)
	for _, limit := range []int{0, 1, 4} {
		f := polyloop.RunFilter{Descending: true, Limit: limit}
		want := desc
		if limit > 0 {
			want = want[:limit]
		}
		got, err := lister.ListRuns(e.ctx, f)
		if err != nil {
			return broke(ruleListDescending, "ListRuns(%s) failed: %w", cutJSON(f), err)
		}
		if err := sameListing(want, got); err != nil {
			return broke(ruleListDescending, "ListRuns(%s): runs %q, want %q: %w", cutJSON(f), ids(got), ids(want), err)
		}
	}
	for _, descending := range []bool{false, true} {
		order := all
		if descending {
			order = desc
		}
		for _, size := range []int{1, 2, 3} {
			if err := pageThrough(e, lister, descending, size, order); err != nil {
				return err
			}
		}
	}
	// A cursor between runs: "B" comes before "Banana" among the runs
	// started at the same instant, and is no run's id.
	between := polyloop.RunPosition{StartedAt: sampleTime.Add(time.Hour), RunID: "B"}
	for _, descending := range []bool{false, true} {
		f := polyloop.RunFilter{Descending: descending, After: &between}
		var want []polyloop.RunSummary
		for _, r := range all {
			if f.Matches(r) {
				want = append(want, r)
			}
		}
		if descending {
			slices.Reverse(want)
		}
		got, err := lister.ListRuns(e.ctx, f)
		if err != nil {
			return broke(ruleListAfter, "ListRuns(%s) failed: %w", cutJSON(f), err)
		}
		if err := sameListing(want, got); err != nil {
			return broke(ruleListAfter, "ListRuns(%s), a position between runs: runs %q, want %q: %w", cutJSON(f), ids(got), ids(want), err)
		}
	}
	return nil
}

// pageThrough lists pages of size runs, each page's After the last position
// of the one before, and compares the pages together with order.
func pageThrough(e *env, lister polyloop.RunLister, descending bool, size int, order []polyloop.RunSummary) error {
	var got []polyloop.RunSummary
	var after *polyloop.RunPosition
	for pages := 0; pages <= len(order); pages++ {
		f := polyloop.RunFilter{Limit: size, Descending: descending, After: after}
		page, err := lister.ListRuns(e.ctx, f)
		if err != nil {
			return broke(ruleListAfter, "ListRuns(%s) failed: %w", cutJSON(f), err)
		}
		got = append(got, page...)
		if len(page) < size {
			break
		}
		p := page[len(page)-1].Position()
		after = &p
	}
	if err := sameListing(order, got); err != nil {
		return broke(ruleListAfter, "pages of %d (Descending %v), each After the last position of the one before: runs %q, want %q: %w",
			size, descending, ids(got), ids(order), err)
	}
	return nil
}

// orderedLister is a new store of h holding orderedRuns, and their
// summaries; a skip when the store lists no runs.
func orderedLister(e *env, h StoreHarness) (polyloop.RunLister, []polyloop.RunSummary, error) {
	s := h.New(e.t)
	lister, ok := s.(polyloop.RunLister)
	if !ok {
		return nil, nil, skipf("the store (%T) does not implement polyloop.RunLister", s)
	}
	all, err := writeOrderedRuns(e, s)
	return lister, all, err
}

// writeOrderedRuns writes orderedRuns into s and returns their summaries.
func writeOrderedRuns(e *env, s polyloop.Store) ([]polyloop.RunSummary, error) {
	var all []polyloop.RunSummary
	for _, i := range orderedWriteOrder {
		r := orderedRuns[i]
		recs := records(0, sampleBodies(r.id, 64)[:2]...) // run_started, model_call_intent
		if r.started < 0 {
			recs = intents(0, 1, r.id)
		}
		for j := range recs {
			recs[j].At = recs[j].At.Add(max(r.started, 0))
		}
		if err := appendOK(e.ctx, s, r.id, recs...); err != nil {
			return nil, err
		}
		var sum polyloop.RunSummary
		for _, rec := range recs {
			sum.Apply(rec)
		}
		sum.RunID = r.id
		all = append(all, sum)
	}
	return all, nil
}

// taskRuns are the tasks of the ListRunsTask check, by run id: upper and
// lower case, SQL's wildcards, a text past the summary's excerpt.
var taskRuns = []struct{ id, task string }{
	{"polylooptest-task-a", "Translate «Ünïcode» 世界 into French"},
	{"polylooptest-task-b", "translate this, then fall back"},
	{"polylooptest-task-c", "100% of _all_ tests"},
	{"polylooptest-task-d", strings.Repeat("x", polyloop.MaxSummaryTask) + " hidden needle"},
}

// taskSearches are the TaskContains texts the check lists by.
var taskSearches = []string{"Translate", "translate", "世界", "«Ünïcode»", "_all", "0%", "%", "fall", "hidden needle", "x", "no such text"}

// checkStoreListTask lists runs by TaskContains: a case-sensitive substring
// of the summary's task, its first MaxSummaryTask characters — never a
// pattern, never the task past the excerpt.
func checkStoreListTask(e *env, h StoreHarness) error {
	s := h.New(e.t)
	lister, ok := s.(polyloop.RunLister)
	if !ok {
		return skipf("the store (%T) does not implement polyloop.RunLister", s)
	}
	var all []polyloop.RunSummary
	for i, r := range taskRuns {
		bodies := sampleBodies(r.id, 64)[:2]
		started := bodies[0].(*polyloop.RunStarted)
		started.Snapshot.Task.Input = r.task
		recs := records(0, bodies...)
		for j := range recs {
			recs[j].At = recs[j].At.Add(time.Duration(i) * time.Second)
		}
		if err := appendOK(e.ctx, s, r.id, recs...); err != nil {
			return err
		}
		var sum polyloop.RunSummary
		for _, rec := range recs {
			sum.Apply(rec)
		}
		all = append(all, sum)
	}
	for _, q := range taskSearches {
		f := polyloop.RunFilter{TaskContains: q}
		var want []polyloop.RunSummary
		for _, r := range all {
			if f.Matches(r) {
				want = append(want, r)
			}
		}
		got, err := lister.ListRuns(e.ctx, f)
		if err != nil {
			return broke(ruleListTask, "ListRuns(%s) failed: %w", cutJSON(f), err)
		}
		if err := sameListing(want, got); err != nil {
			return broke(ruleListTask, "ListRuns(TaskContains %q): runs %q, want %q: %w", q, ids(got), ids(want), err)
		}
	}
	return nil
}
