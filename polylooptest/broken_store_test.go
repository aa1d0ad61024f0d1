package polylooptest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// storeFaults are the ways brokenStore breaks the contract.
type storeFaults struct {
	notFound    bool // ReadRows of an unknown run is an error
	noSeqCheck  bool // any seq is accepted
	partial     bool // a batch is written row by row, a failure leaving a prefix
	foldCase    bool // run ids are case-insensitive
	busy        bool // a concurrent Append fails
	racy        bool // the seq check and the write are not atomic
	wrongCancel bool // a cancelled context gives an error that does not wrap it
	jsonb       bool // the data is kept as parsed JSON (a jsonb column): read back re-encoded
	noChecksum  bool // the checksum is not kept: rows read back unchecked
	retains     bool // the rows' bytes are kept as given, not copied
	unordered   bool // rows are read back in the reverse order (a SELECT without ORDER BY)
	refuses     bool // every Append fails
	byID        bool // ListRuns orders by run id
	noFilter    bool // ListRuns ignores the filter
	tieFold     bool // ListRuns breaks ties by run id without case
	noStartLast bool // ListRuns puts runs without RunStarted last
	limitFirst  bool // ListRuns applies Limit before ordering
	descIgnored bool // ListRuns ignores Descending
	descTies    bool // Descending keeps ties by run id in forward order
	descNoStart bool // Descending puts runs without RunStarted first (an ORDER BY … DESC NULLS FIRST)
	afterEqual  bool // After keeps the run at the position too
	afterAsc    bool // After keeps the runs after the position in ascending order, Descending or not
	afterByID   bool // After finds the position by run id alone, ignoring the start time
	taskFold    bool // TaskContains ignores case
	taskLike    bool // TaskContains is a LIKE pattern: % and _ are wildcards
	taskFull    bool // TaskContains searches the whole task, past the summary's excerpt
	rangeSkip   bool // ReadRowsFrom starts one row after from: a chunk boundary loses a row
	rangeRepeat bool // ReadRowsFrom starts one row before from: a chunk boundary repeats a row
	rangeLimit  bool // ReadRowsFrom ignores its limit
	rangeShort  bool // ReadRowsFrom returns one row fewer than limit when it could give limit
}

// brokenStore keeps rows in memory and breaks the contract in the ways its
// storeFaults say.
type brokenStore struct {
	storeFaults
	armed bool // the next batch fails after its first row

	mu    sync.Mutex
	runs  map[string][]polyloop.Row
	order []string // run keys in the order first written
}

func (s *brokenStore) key(id string) string {
	if s.foldCase {
		return strings.ToLower(id)
	}
	return id
}

func (s *brokenStore) Append(ctx context.Context, runID string, rows []polyloop.Row) error {
	if s.refuses {
		return errors.New("brokenStore: read-only file system")
	}
	if ctx.Err() != nil {
		if s.wrongCancel {
			return errors.New("brokenStore: cancelled")
		}
		return ctx.Err()
	}
	if s.busy {
		if !s.mu.TryLock() {
			return errors.New("brokenStore: database is locked")
		}
		spin()
	} else {
		s.mu.Lock()
	}
	next := int64(len(s.runs[s.key(runID)]))
	if s.racy {
		s.mu.Unlock()
		time.Sleep(time.Millisecond)
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	if !s.noSeqCheck && rows[0].Seq != next {
		return polyloop.ErrSeqConflict
	}
	return s.write(s.key(runID), rows)
}

func (s *brokenStore) write(key string, rows []polyloop.Row) error {
	if s.runs == nil {
		s.runs = map[string][]polyloop.Row{}
	}
	if _, ok := s.runs[key]; !ok {
		s.order = append(s.order, key)
	}
	staged := slices.Clone(s.runs[key])
	for i, r := range rows {
		if s.armed && i == 1 {
			s.armed = false
			if s.partial {
				s.runs[key] = staged
			}
			return errors.New("brokenStore: write failed")
		}
		if !s.retains {
			r.Data = slices.Clone(r.Data)
		}
		if s.jsonb {
			var v any
			if err := json.Unmarshal(r.Data, &v); err != nil {
				return err
			}
			r.Data, _ = json.Marshal(v)
		}
		if s.noChecksum {
			r.Checksum, r.Unchecked = 0, true
		}
		staged = append(staged, r)
	}
	s.runs[key] = staged
	return nil
}

func (s *brokenStore) ReadRows(ctx context.Context, runID string) ([]polyloop.Row, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rows, ok := s.runs[s.key(runID)]
	if !ok && s.notFound {
		return nil, errors.New("brokenStore: run not found")
	}
	out := slices.Clone(rows)
	if s.unordered {
		slices.Reverse(out)
	}
	return out, nil
}

func (s *brokenStore) ReadRowsFrom(ctx context.Context, runID string, from int64, limit int) ([]polyloop.Row, error) {
	rows, err := s.ReadRows(ctx, runID)
	if err != nil {
		return nil, err
	}
	switch {
	case s.rangeSkip && from > 0:
		from++
	case s.rangeRepeat && from > 0:
		from--
	}
	to := from + int64(limit)
	switch {
	case s.rangeLimit:
		to = int64(len(rows))
	case s.rangeShort && limit > 1 && to <= int64(len(rows)):
		to--
	}
	from = min(from, int64(len(rows)))
	return rows[from:min(to, int64(len(rows)))], nil
}

func (s *brokenStore) ListRuns(ctx context.Context, f polyloop.RunFilter) ([]polyloop.RunSummary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []polyloop.RunSummary
	for _, key := range s.order {
		sum := polyloop.RunSummary{RunID: key}
		task := ""
		for _, row := range s.runs[key] {
			r := row.Record
			sum.Apply(r)
			if b, ok := r.Body.(*polyloop.RunStarted); ok {
				task = b.Snapshot.Task.Input
			}
		}
		if s.noFilter || s.matches(f, sum, task) {
			out = append(out, sum)
		}
	}
	if s.limitFirst && f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	slices.SortFunc(out, s.compare)
	if f.Descending {
		out = s.reverse(out)
	}
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// matches is f.Matches, with the faults of TaskContains and After; task is
// the run's whole task.
func (s *brokenStore) matches(f polyloop.RunFilter, sum polyloop.RunSummary, task string) bool {
	g := f
	g.TaskContains, g.After = "", nil
	if !g.Matches(sum) {
		return false
	}
	if q := f.TaskContains; q != "" {
		in := sum.Task
		switch {
		case s.taskFull:
			in = task
		case s.taskFold:
			in, q = strings.ToLower(in), strings.ToLower(q)
		}
		if s.taskLike {
			if !likeContains(in, q) {
				return false
			}
		} else if !strings.Contains(in, q) {
			return false
		}
	}
	if a := f.After; a != nil {
		p := sum.Position()
		switch {
		case s.afterEqual && p == *a:
			return true
		case s.afterByID:
			return (p.RunID > a.RunID) != f.Descending && p.RunID != a.RunID
		case s.afterAsc || !f.Descending:
			return a.Before(p)
		}
		return p.Before(*a)
	}
	return true
}

// likeContains is SQL's LIKE '%q%' without escaping: _ matches any one
// character, % any run.
func likeContains(s, q string) bool {
	var match func(s, q []rune) bool
	match = func(s, q []rune) bool {
		if len(q) == 0 {
			return true
		}
		switch q[0] {
		case '%':
			for i := 0; i <= len(s); i++ {
				if match(s[i:], q[1:]) {
					return true
				}
			}
			return false
		case '_':
			return len(s) > 0 && match(s[1:], q[1:])
		}
		return len(s) > 0 && s[0] == q[0] && match(s[1:], q[1:])
	}
	rs, rq := []rune(s), []rune(q)
	for i := 0; i <= len(rs); i++ {
		if match(rs[i:], rq) {
			return true
		}
	}
	return false
}

// reverse orders a listing for Descending, rightly unless a fault says
// otherwise.
func (s *brokenStore) reverse(out []polyloop.RunSummary) []polyloop.RunSummary {
	switch {
	case s.descIgnored:
		return out
	case s.descTies:
		slices.SortStableFunc(out, func(a, b polyloop.RunSummary) int {
			if a.StartedAt.IsZero() != b.StartedAt.IsZero() {
				if a.StartedAt.IsZero() {
					return 1
				}
				return -1
			}
			if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
				return c
			}
			return strings.Compare(a.RunID, b.RunID)
		})
		return out
	}
	slices.Reverse(out)
	if s.descNoStart {
		slices.SortStableFunc(out, func(a, b polyloop.RunSummary) int {
			switch {
			case a.StartedAt.IsZero() == b.StartedAt.IsZero():
				return 0
			case a.StartedAt.IsZero():
				return -1
			}
			return 1
		})
	}
	return out
}

// compare orders a listing, rightly unless a fault says otherwise.
func (s *brokenStore) compare(a, b polyloop.RunSummary) int {
	switch {
	case s.byID:
		return strings.Compare(a.RunID, b.RunID)
	case s.noStartLast && a.StartedAt.IsZero() != b.StartedAt.IsZero():
		if a.StartedAt.IsZero() {
			return 1
		}
		return -1
	}
	if c := a.StartedAt.Compare(b.StartedAt); c != 0 {
		return c
	}
	if s.tieFold {
		return strings.Compare(strings.ToLower(a.RunID), strings.ToLower(b.RunID))
	}
	return strings.Compare(a.RunID, b.RunID)
}

func storeWith(f storeFaults) StoreHarness {
	h := goodStoreHarness()
	h.New = func(testing.TB) polyloop.Store { return &brokenStore{storeFaults: f} }
	h.NewFaulty = func(t testing.TB) (polyloop.Store, func()) {
		s := h.New(t).(*brokenStore)
		return s, func() { s.armed = true }
	}
	return h
}

// forgetfulBacking is a Reopen that loses the last batch: a store that
// acknowledged before its data was durable.
func forgetfulReopen(_ testing.TB, s polyloop.Store) polyloop.Store {
	g := s.(*goodStore)
	g.b.mu.Lock()
	defer g.b.mu.Unlock()
	for id, rows := range g.b.runs {
		g.b.runs[id] = rows[:len(rows)-2]
	}
	return &goodStore{b: g.b}
}

// blockingStore hangs on ReadRows until the test ends.
type blockingStore struct {
	goodStore
	release chan struct{}
}

func (s *blockingStore) ReadRows(ctx context.Context, runID string) ([]polyloop.Row, error) {
	<-s.release
	return nil, nil
}

// panickingStore panics on ReadRows.
type panickingStore struct{ goodStore }

func (s *panickingStore) ReadRows(context.Context, string) ([]polyloop.Row, error) {
	panic("panickingStore: nil map")
}

// sharerDropping says it shares snapshots, and keeps none: its run_started
// rows come back without the snapshot they refer to.
type sharerDropping struct{ goodStore }

func (*sharerDropping) SharesSnapshots() {}

func (s *sharerDropping) Append(ctx context.Context, runID string, rows []polyloop.Row) error {
	rows = slices.Clone(rows)
	for i := range rows {
		rows[i].Shared = nil
	}
	return s.goodStore.Append(ctx, runID, rows)
}

// sharerRetaining keeps the caller's shared snapshot instead of a copy.
type sharerRetaining struct{ goodStore }

func (*sharerRetaining) SharesSnapshots() {}

// keeperDropping is a RecordKeeper that keeps rows' bytes but not their
// records: it reads back rows the Runner cannot use.
type keeperDropping struct{ goodStore }

func (*keeperDropping) KeepsRecords() {}

func (s *keeperDropping) Append(ctx context.Context, runID string, rows []polyloop.Row) error {
	rows = slices.Clone(rows)
	for i := range rows {
		rows[i].Record = polyloop.Record{}
	}
	return s.goodStore.Append(ctx, runID, rows)
}

func brokenStoreCases() []brokenCase {
	c := func(check string, r rule, h StoreHarness) brokenCase {
		return brokenCase{"Store", check, r, func(t *testing.T) outcome { return runNamed(t, storeChecks, check, h, h.settings()) }}
	}
	reopen := goodStoreHarness()
	reopen.Reopen = forgetfulReopen
	hang := goodStoreHarness()
	hang.Timeout = 200 * time.Millisecond
	hang.New = func(t testing.TB) polyloop.Store {
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		return &blockingStore{goodStore: *newGoodStore(), release: release}
	}
	panics := goodStoreHarness()
	panics.New = func(testing.TB) polyloop.Store { return &panickingStore{*newGoodStore()} }
	dropping := goodStoreHarness()
	dropping.New = func(testing.TB) polyloop.Store { return &keeperDropping{*newGoodStore()} }
	sharerDrops := goodStoreHarness()
	sharerDrops.New = func(testing.TB) polyloop.Store { return &sharerDropping{*newGoodStore()} }
	sharerRetains := goodStoreHarness()
	sharerRetains.New = func(testing.TB) polyloop.Store { return &sharerRetaining{*newGoodStore()} }
	return []brokenCase{
		c("SharedSnapshot", ruleSharedKept, sharerDrops),
		c("SharedSnapshot", ruleSharedKept, sharerRetains),
		c("EmptyLogForUnknownRun", ruleEmptyLog, storeWith(storeFaults{notFound: true})),
		c("EmptyLogForUnknownRun", ruleReturns, hang),
		c("EmptyLogForUnknownRun", ruleNoPanic, panics),
		c("RoundTrip", ruleReadsBack, storeWith(storeFaults{jsonb: true})),
		c("RoundTrip", ruleReadsBack, storeWith(storeFaults{noChecksum: true})),
		c("RoundTrip", ruleReadsBack, storeWith(storeFaults{unordered: true})),
		c("RoundTrip", ruleReadsBack, dropping),
		c("RangedRead", ruleReadsRange, storeWith(storeFaults{rangeSkip: true})),
		c("RangedRead", ruleReadsRange, storeWith(storeFaults{rangeRepeat: true})),
		c("RangedRead", ruleReadsRange, storeWith(storeFaults{rangeLimit: true})),
		c("RangedRead", ruleReadsRange, storeWith(storeFaults{rangeShort: true})),
		c("RangedRead", ruleReadsRange, storeWith(storeFaults{unordered: true})),
		c("RowsNotRetained", ruleNotRetained, storeWith(storeFaults{retains: true})),
		c("SeqRule", ruleSeqConflict, storeWith(storeFaults{noSeqCheck: true})),
		c("BatchAllOrNothing", ruleSeqConflict, storeWith(storeFaults{noSeqCheck: true})),
		c("InjectedFailure", ruleAtomic, storeWith(storeFaults{partial: true})),
		c("RunsIsolated", ruleRunsIsolated, storeWith(storeFaults{foldCase: true})),
		c("ConcurrentRuns", ruleConcurrentUse, storeWith(storeFaults{busy: true})),
		c("ConcurrentWriters", ruleOneWriterWins, storeWith(storeFaults{racy: true})),
		c("CancelledContext", ruleCancelAtomic, storeWith(storeFaults{wrongCancel: true})),
		c("Reopen", ruleDurable, reopen),
		c("RoundTrip", ruleAcceptsNext, storeWith(storeFaults{refuses: true})),
		c("ListRuns", ruleListOrder, storeWith(storeFaults{byID: true})),
		c("ListRuns", ruleListSummaries, storeWith(storeFaults{noFilter: true})),
		c("ListRunsOrder", ruleListOrder, storeWith(storeFaults{tieFold: true})),
		c("ListRunsOrder", ruleListOrder, storeWith(storeFaults{noStartLast: true})),
		c("ListRunsOrder", ruleListLimitAfter, storeWith(storeFaults{limitFirst: true})),
		c("ListRunsPages", ruleListDescending, storeWith(storeFaults{descIgnored: true})),
		c("ListRunsPages", ruleListDescending, storeWith(storeFaults{descTies: true})),
		c("ListRunsPages", ruleListDescending, storeWith(storeFaults{descNoStart: true})),
		c("ListRunsPages", ruleListAfter, storeWith(storeFaults{afterEqual: true})),
		c("ListRunsPages", ruleListAfter, storeWith(storeFaults{afterAsc: true})),
		c("ListRunsPages", ruleListAfter, storeWith(storeFaults{afterByID: true})),
		c("ListRunsTask", ruleListTask, storeWith(storeFaults{taskFold: true})),
		c("ListRunsTask", ruleListTask, storeWith(storeFaults{taskLike: true})),
		c("ListRunsTask", ruleListTask, storeWith(storeFaults{taskFull: true})),
	}
}
