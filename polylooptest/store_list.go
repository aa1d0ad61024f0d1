package polylooptest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/polyloop/polyloop"
)

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

// orderedRuns are the runs of the ListRunsOrder check, in the order
// ListRuns must give them: two logs that do not begin with RunStarted
// (ids in byte order: upper case before lower case), an early run, three
// runs started at the same instant (byte order puts upper case before '_'
// before lower case; a linguistic collation, or case folding, would not),
// and a late run. They are written in another order.
var orderedRuns = []struct {
	id      string
	started time.Duration // from the sample time; -1: no RunStarted
}{
	{"Y-upper", -1}, {"x-lower", -1}, {"zzz-early", 0}, {"Banana", time.Hour}, {"_under", time.Hour},
	{"apple", time.Hour}, {"AAA-late", 2 * time.Hour},
}

// orderedWriteOrder is the order the check writes orderedRuns in (indexes).
var orderedWriteOrder = []int{5, 6, 1, 3, 2, 4, 0}

func checkStoreListOrder(e *env, h StoreHarness) error {
	lister, all, err := orderedLister(e, h)
	if err != nil {
		return err
	}
	for _, limit := range []int{0, 3, 5} {
		if err := expectListing(e, lister, polyloop.RunFilter{Limit: limit}, all); err != nil {
			return err
		}
	}
	return nil
}

// expectListing lists with f and compares with the summaries of all that
// f matches, in the listing order, cut to f.Limit; a difference names the
// rule it breaks: the summaries (which runs, and their fields), the order,
// or the limit.
func expectListing(e *env, lister polyloop.RunLister, f polyloop.RunFilter, all []polyloop.RunSummary) error {
	matching := []polyloop.RunSummary{}
	for _, s := range all {
		if f.Matches(s) {
			matching = append(matching, s)
		}
	}
	slices.SortFunc(matching, listingOrder)
	want := matching
	if f.Limit > 0 && len(want) > f.Limit {
		want = want[:f.Limit]
	}
	got, err := lister.ListRuns(e.ctx, f)
	if err != nil {
		return broke(ruleListSummaries, "ListRuns(%s) failed: %w", cutJSON(f), err)
	}
	if err := sameListing(want, got); err != nil {
		return listingRule(matching, want, got, err, "ListRuns(%s)", cutJSON(f))
	}
	return nil
}

// listingRule says which rule a listing that differs from want breaks:
// the same runs in another order break the order; with a limit, other runs
// than the first break the limit (wrong summaries of the right runs break
// the summaries); without one, other runs or fields break the summaries.
func listingRule(matching, want, got []polyloop.RunSummary, diff error, format string, args ...any) error {
	where := fmt.Sprintf(format, args...)
	switch {
	case sameRuns(want, got) && sameListing(byID(want), byID(got)) == nil:
		return broke(ruleListOrder, "%s: the runs are listed in the order %q, want %q", where, ids(got), ids(want))
	case len(want) < len(matching) && !sameRuns(want, got):
		return broke(ruleListLimitAfter, "%s: listed runs %q; the first %d in order are %q", where, ids(got), len(want), ids(want))
	}
	return broke(ruleListSummaries, "%s: the summaries differ from those RunSummary.Apply folds from the records, filtered: %w", where, diff)
}

// listingOrder is the order of ListRuns: runs without RunStarted (no start
// time) first, then by start time, ties by run id compared byte by byte.
func listingOrder(a, b polyloop.RunSummary) int {
	if c := a.StartedAt.Compare(b.StartedAt); c != 0 {
		return c
	}
	return strings.Compare(a.RunID, b.RunID)
}

// sameListing compares two listings by their encoding, times in UTC (the
// instants, not the zones).
func sameListing(want, got []polyloop.RunSummary) error {
	w, _ := json.Marshal(utcSummaries(want))
	g, _ := json.Marshal(utcSummaries(got))
	if string(w) != string(g) {
		return errors.New(firstDiff(w, g))
	}
	return nil
}

func sameRuns(a, b []polyloop.RunSummary) bool {
	return slices.Equal(slices.Sorted(slices.Values(ids(a))), slices.Sorted(slices.Values(ids(b))))
}

func ids(sums []polyloop.RunSummary) []string {
	out := make([]string, len(sums))
	for i, s := range sums {
		out[i] = s.RunID
	}
	return out
}

func byID(sums []polyloop.RunSummary) []polyloop.RunSummary {
	out := slices.Clone(sums)
	slices.SortFunc(out, func(a, b polyloop.RunSummary) int { return strings.Compare(a.RunID, b.RunID) })
	return out
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
