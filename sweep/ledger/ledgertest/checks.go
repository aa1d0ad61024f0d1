package ledgertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/sweep/ledger"
)

// entry returns the entry of attempt at coordinate coord of sweep.
func entry(sweep, coord string, attempt int) ledger.Entry {
	e := ledger.Entry{
		RunID: fmt.Sprintf("%s.a%d", coord, attempt), Sweep: sweep, Coord: coord,
		Agent: "agent", AgentHash: "sha256:" + coord, TaskID: "task-" + coord, Epoch: 1, Attempt: attempt,
		Task: json.RawMessage(`{"input":"what is 2+2?","target":["4"]}`), TaskDigest: "d-" + coord,
	}
	if attempt > 1 {
		e.Previous = fmt.Sprintf("%s.a%d", coord, attempt-1)
	}
	return e
}

func started(runID string) polyloop.Record {
	snap := polyloop.Snapshot{Agent: "agent", Task: polyloop.Task{Input: "what is 2+2?"}}
	h, _ := snap.Hash()
	return polyloop.Record{Seq: 0, At: time.Unix(1700000000, 0).UTC(), Body: &polyloop.RunStarted{
		RunID: runID, Snapshot: snap, SnapshotHash: h, LibraryVersion: polyloop.LibraryVersion}}
}

func finished(seq int64, reason polyloop.StopReason) polyloop.Record {
	return polyloop.Record{Seq: seq, At: time.Unix(1700000001, 0).UTC(), Body: &polyloop.RunFinished{
		StopReason: reason, Totals: polyloop.Totals{Steps: 1, ModelCalls: 1, InputTokens: 10, OutputTokens: 5}}}
}

// Contract: PutSweep records a manifest, Sweep returns it as put (the
// manifest's bytes kept), a later PutSweep replaces it, and an unknown
// name is ErrNotFound.
func testSweepRoundTrip(ctx context.Context, s Store) error {
	if _, err := s.Sweep(ctx, "nope"); !errors.Is(err, ledger.ErrNotFound) {
		return fmt.Errorf("Sweep of an unknown name: %v, want ErrNotFound", err)
	}
	at := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	in := ledger.Sweep{Name: "s1", Manifest: json.RawMessage(`{"b": 1,  "a": [1, 2]}`), UpdatedAt: at}
	if err := s.PutSweep(ctx, in); err != nil {
		return fmt.Errorf("%s: %w", "PutSweep", err)
	}
	got, err := s.Sweep(ctx, "s1")
	if err != nil {
		return fmt.Errorf("%s: %w", "Sweep", err)
	}
	if got.Name != "s1" || string(got.Manifest) != string(in.Manifest) || !got.UpdatedAt.Equal(at) {
		return fmt.Errorf("Sweep = %+v (manifest %s), want %+v (manifest %s)", got, got.Manifest, in, in.Manifest)
	}
	in.Manifest, in.UpdatedAt = json.RawMessage(`{"v":2}`), at.Add(time.Second)
	if err := s.PutSweep(ctx, in); err != nil {
		return fmt.Errorf("%s: %w", "PutSweep again", err)
	}
	if got, err = s.Sweep(ctx, "s1"); err != nil || string(got.Manifest) != `{"v":2}` || !got.UpdatedAt.Equal(in.UpdatedAt) {
		return fmt.Errorf("after a second PutSweep: %+v %s (%v), want the second manifest", got, got.Manifest, err)
	}
	return nil
}

// Contract: Sweeps lists every sweep, the most recently put first, with the
// counts of its entries.
func testSweeps(ctx context.Context, s Store) error {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	if err := s.PutSweep(ctx, ledger.Sweep{Name: "old", Manifest: json.RawMessage(`{}`), UpdatedAt: t0}); err != nil {
		return fmt.Errorf("%s: %w", "PutSweep old", err)
	}
	if err := s.PutSweep(ctx, ledger.Sweep{Name: "new", Manifest: json.RawMessage(`{}`), UpdatedAt: t0.Add(time.Hour)}); err != nil {
		return fmt.Errorf("%s: %w", "PutSweep new", err)
	}
	a, b, c := entry("new", "new.x.t1.e1", 1), entry("new", "new.x.t1.e1", 2), entry("new", "new.x.t1.e3", 1)
	c.Epoch = 3
	d := entry("new", "new.y.t2.e1", 1)
	d.AgentHash, d.TaskID = "sha256:other", "task-other"
	if err := s.AddEntries(ctx, []ledger.Entry{a, b, c, d}); err != nil {
		return fmt.Errorf("%s: %w", "AddEntries", err)
	}
	list, err := s.Sweeps(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", "Sweeps", err)
	}
	if len(list) != 2 || list[0].Name != "new" || list[1].Name != "old" {
		return fmt.Errorf("Sweeps = %+v, want new then old", list)
	}
	// a and b are two attempts at one coordinate (one task, one agent
	// hash); c and d have their own task ids and agent hashes.
	want := ledger.Info{Name: "new", Runs: 4, Tasks: 3, Agents: 3, Epochs: 3, UpdatedAt: t0.Add(time.Hour)}
	if got := list[0]; got.Name != want.Name || got.Runs != want.Runs || got.Tasks != want.Tasks || got.Agents != want.Agents ||
		got.Epochs != want.Epochs || !got.UpdatedAt.Equal(want.UpdatedAt) {
		return fmt.Errorf("Sweeps[0] = %+v, want %+v", got, want)
	}
	if got := list[1]; got.Runs != 0 || got.Tasks != 0 || got.Epochs != 0 {
		return fmt.Errorf("a sweep without entries: %+v, want zero counts", got)
	}
	return nil
}

// Contract: adding an entry already recorded with equal fields is no error
// and records it once.
func testAddIdempotent(ctx context.Context, s Store) error {
	e := entry("s", "s.h.t.e1", 1)
	if err := s.AddEntries(ctx, []ledger.Entry{e}); err != nil {
		return fmt.Errorf("%s: %w", "AddEntries", err)
	}
	if err := s.AddEntries(ctx, []ledger.Entry{e, entry("s", "s.h.t.e1", 2)}); err != nil {
		return fmt.Errorf("%s: %w", "AddEntries again", err)
	}
	got, err := s.Coords(ctx, "s", []string{"s.h.t.e1"})
	if err != nil {
		return fmt.Errorf("%s: %w", "Coords", err)
	}
	if len(got) != 2 || !got[0].Entry.Equal(e) {
		return fmt.Errorf("Coords = %+v, want the entry once and its second attempt", got)
	}
	return nil
}

// Contract: an entry recorded with other fields makes AddEntries fail with
// ErrConflict, and nothing of that call is written.
func testAddConflict(ctx context.Context, s Store) error {
	e := entry("s", "s.h.t.e1", 1)
	if err := s.AddEntries(ctx, []ledger.Entry{e}); err != nil {
		return fmt.Errorf("%s: %w", "AddEntries", err)
	}
	changed := e
	changed.TaskDigest = "another"
	fresh := entry("s", "s.h.u.e1", 1)
	err := s.AddEntries(ctx, []ledger.Entry{fresh, changed})
	if !errors.Is(err, ledger.ErrConflict) {
		return fmt.Errorf("AddEntries with a changed entry: %v, want ErrConflict", err)
	}
	got, err := s.Coords(ctx, "s", []string{"s.h.u.e1", "s.h.t.e1"})
	if err != nil {
		return fmt.Errorf("%s: %w", "Coords", err)
	}
	if len(got) != 1 || !got[0].Entry.Equal(e) {
		return fmt.Errorf("after the conflict: %+v, want only the first entry, unchanged", got)
	}
	return nil
}

// Contract: Coords returns every attempt of the coordinates asked, ordered
// by coordinate then attempt, each with its run's summary (nil without a
// record) and its scores.
func testCoords(ctx context.Context, s Store) error {
	c1, c2 := "s.h.t1.e1", "s.h.t2.e1"
	e11, e12, e21 := entry("s", c1, 1), entry("s", c1, 2), entry("s", c2, 1)
	other := entry("s2", "s2.h.t1.e1", 1)
	if err := s.AddEntries(ctx, []ledger.Entry{e21, e12, e11, other}); err != nil {
		return fmt.Errorf("%s: %w", "AddEntries", err)
	}
	if err := polyloop.AppendRecords(ctx, s, e11.RunID, started(e11.RunID), finished(1, polyloop.StopLLMError)); err != nil {
		return fmt.Errorf("%s: %w", "Append", err)
	}
	if err := polyloop.AppendRecords(ctx, s, e12.RunID, started(e12.RunID)); err != nil {
		return fmt.Errorf("%s: %w", "Append", err)
	}
	sc := ledger.Score{RunID: e11.RunID, Scorer: "exact", Version: "exact/1", Description: "d", Value: 1, ScoredAt: time.Unix(5, 0).UTC()}
	if err := s.PutScores(ctx, []ledger.Score{sc}); err != nil {
		return fmt.Errorf("%s: %w", "PutScores", err)
	}
	got, err := s.Coords(ctx, "s", []string{c2, c1, "s.h.absent.e1"})
	if err != nil {
		return fmt.Errorf("%s: %w", "Coords", err)
	}
	var ids []string
	for _, st := range got {
		ids = append(ids, st.RunID)
	}
	if want := []string{e11.RunID, e12.RunID, e21.RunID}; !reflect.DeepEqual(ids, want) {
		return fmt.Errorf("Coords order %v, want %v", ids, want)
	}
	if r := got[0].Run; r == nil || !r.Finished || r.StopReason != polyloop.StopLLMError || r.Totals == nil || r.Totals.Tokens() != 15 {
		return fmt.Errorf("finished run's summary %+v", r)
	}
	if len(got[0].Scores) != 1 || got[0].Scores[0].Value != 1 || got[0].Scores[0].Scorer != "exact" {
		return fmt.Errorf("scores of the finished run %+v", got[0].Scores)
	}
	if r := got[1].Run; r == nil || r.Finished || r.Records != 1 {
		return fmt.Errorf("unfinished run's summary %+v", r)
	}
	if got[2].Run != nil || len(got[2].Scores) != 0 {
		return fmt.Errorf("run without records: %+v, want no summary and no scores", got[2])
	}
	if !got[1].Entry.Equal(e12) {
		return fmt.Errorf("entry %+v, want %+v", got[1].Entry, e12)
	}
	return nil
}

// Contract: Runs returns the entries of the run ids asked, of any sweep,
// ordered by run id; unknown ids are absent.
func testRuns(ctx context.Context, s Store) error {
	a, b := entry("s", "s.h.t2.e1", 1), entry("other", "other.h.t1.e1", 1)
	if err := s.AddEntries(ctx, []ledger.Entry{a, b}); err != nil {
		return fmt.Errorf("%s: %w", "AddEntries", err)
	}
	if err := polyloop.AppendRecords(ctx, s, "unswept", started("unswept")); err != nil {
		return fmt.Errorf("%s: %w", "Append", err)
	}
	got, err := s.Runs(ctx, []string{a.RunID, "unswept", b.RunID, "nope"})
	if err != nil {
		return fmt.Errorf("%s: %w", "Runs", err)
	}
	if len(got) != 2 || got[0].RunID != b.RunID || got[1].RunID != a.RunID || got[0].Sweep != "other" {
		return fmt.Errorf("Runs = %+v, want %s then %s", got, b.RunID, a.RunID)
	}
	return nil
}

// Contract: Page returns a sweep's entries after a run id, ordered by run
// id, at most limit of them.
func testPage(ctx context.Context, s Store) error {
	var all []ledger.Entry
	for i := range 5 {
		all = append(all, entry("s", fmt.Sprintf("s.h.t%d.e1", i), 1))
	}
	all = append(all, entry("t", "t.h.t0.e1", 1))
	if err := s.AddEntries(ctx, all); err != nil {
		return fmt.Errorf("%s: %w", "AddEntries", err)
	}
	var seen []string
	after := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			return errors.New("Page does not advance")
		}
		page, err := s.Page(ctx, "s", after, 2)
		if err != nil {
			return fmt.Errorf("%s: %w", "Page", err)
		}
		for _, st := range page {
			seen = append(seen, st.RunID)
		}
		if len(page) < 2 {
			break
		}
		after = page[len(page)-1].RunID
	}
	var want []string
	for _, e := range all[:5] {
		want = append(want, e.RunID)
	}
	if !reflect.DeepEqual(seen, want) {
		return fmt.Errorf("pages gave %v, want %v", seen, want)
	}
	return nil
}

// Contract: PutScores replaces the score of the same run and scorer and
// keeps the others; every field round-trips; a failure (Error set) is
// read in State.Failed, not in Scores, and a score replaces it.
func testScores(ctx context.Context, s Store) error {
	e := entry("s", "s.h.t.e1", 1)
	if err := s.AddEntries(ctx, []ledger.Entry{e}); err != nil {
		return fmt.Errorf("%s: %w", "AddEntries", err)
	}
	at := time.Date(2026, 12, 1, 0, 0, 0, 987654321, time.UTC)
	first := ledger.Score{RunID: e.RunID, Scorer: "model", Version: "model/1:abc", Description: "graded", Value: 0.5,
		Explanation: "partly", GraderRunID: e.RunID + ".grade", TargetDigest: "td", ScoredAt: at}
	other := ledger.Score{RunID: e.RunID, Scorer: "exact", Version: "exact/1", Description: "exact match", Value: 0, ScoredAt: at}
	if err := s.PutScores(ctx, []ledger.Score{first, other}); err != nil {
		return fmt.Errorf("%s: %w", "PutScores", err)
	}
	again := first
	again.Value, again.Version, again.Explanation = 1, "model/1:def", "right"
	if err := s.PutScores(ctx, []ledger.Score{again}); err != nil {
		return fmt.Errorf("%s: %w", "PutScores again", err)
	}
	got, err := s.Runs(ctx, []string{e.RunID})
	if err != nil {
		return fmt.Errorf("%s: %w", "Runs", err)
	}
	if len(got) != 1 || len(got[0].Scores) != 2 {
		return fmt.Errorf("Runs = %+v, want one entry with two scores", got)
	}
	sc := got[0].Scores
	if !sameScore(sc[0], other) || !sameScore(sc[1], again) {
		return fmt.Errorf("scores %+v, want %+v then %+v (by scorer name, the second replaced)", sc, other, again)
	}
	failed := ledger.Score{RunID: e.RunID, Scorer: "cmd", Version: "command/1:abc", Description: "tests pass", ScoredAt: at,
		Error: "scorer cmd: the command exited with status 7: AssertionError: 1 != 2"}
	if err := s.PutScores(ctx, []ledger.Score{failed}); err != nil {
		return fmt.Errorf("%s: %w", "PutScores of a failure", err)
	}
	if got, err = s.Runs(ctx, []string{e.RunID}); err != nil {
		return fmt.Errorf("%s: %w", "Runs", err)
	}
	if len(got) != 1 || len(got[0].Scores) != 2 || len(got[0].Failed) != 1 || !sameScore(got[0].Failed[0], failed) {
		return fmt.Errorf("after a failure: Runs = %+v, want the two scores and the failure %+v in Failed", got, failed)
	}
	fixed := failed
	fixed.Error, fixed.Value, fixed.Explanation = "", 1, "tests pass"
	if err := s.PutScores(ctx, []ledger.Score{fixed}); err != nil {
		return fmt.Errorf("%s: %w", "PutScores of a score after a failure", err)
	}
	if got, err = s.Runs(ctx, []string{e.RunID}); err != nil {
		return fmt.Errorf("%s: %w", "Runs", err)
	}
	if len(got) != 1 || len(got[0].Scores) != 3 || len(got[0].Failed) != 0 {
		return fmt.Errorf("after a score replaced a failure: Runs = %+v, want three scores, no failure", got)
	}
	return nil
}

func sameScore(a, b ledger.Score) bool {
	at, bt := a.ScoredAt, b.ScoredAt
	a.ScoredAt, b.ScoredAt = time.Time{}, time.Time{}
	return a == b && at.Equal(bt)
}

// Contract: a method given no values does nothing.
func testEmpty(ctx context.Context, s Store) error {
	if err := s.AddEntries(ctx, nil); err != nil {
		return fmt.Errorf("%s: %w", "AddEntries(nil)", err)
	}
	if err := s.PutScores(ctx, nil); err != nil {
		return fmt.Errorf("%s: %w", "PutScores(nil)", err)
	}
	if got, err := s.Coords(ctx, "s", nil); err != nil || len(got) != 0 {
		return fmt.Errorf("Coords(nil) = %v, %v", got, err)
	}
	if got, err := s.Runs(ctx, nil); err != nil || len(got) != 0 {
		return fmt.Errorf("Runs(nil) = %v, %v", got, err)
	}
	if got, err := s.Page(ctx, "s", "", 10); err != nil || len(got) != 0 {
		return fmt.Errorf("Page of an empty sweep = %v, %v", got, err)
	}
	if got, err := s.Sweeps(ctx); err != nil || len(got) != 0 {
		return fmt.Errorf("Sweeps of an empty store = %v, %v", got, err)
	}
	return nil
}

// Contract: with a done context every method fails with an error wrapping
// the context's, and writes nothing.
func testCancelled(ctx context.Context, s Store) error {
	done, cancel := context.WithCancel(ctx)
	cancel()
	e := entry("s", "s.h.t.e1", 1)
	calls := map[string]error{
		"PutSweep":   s.PutSweep(done, ledger.Sweep{Name: "s", Manifest: json.RawMessage(`{}`), UpdatedAt: time.Now()}),
		"AddEntries": s.AddEntries(done, []ledger.Entry{e}),
		"PutScores":  s.PutScores(done, []ledger.Score{{RunID: e.RunID, Scorer: "x", Version: "1", ScoredAt: time.Now()}}),
	}
	_, calls["Sweep"] = s.Sweep(done, "s")
	_, calls["Sweeps"] = s.Sweeps(done)
	_, calls["Coords"] = s.Coords(done, "s", []string{e.Coord})
	_, calls["Runs"] = s.Runs(done, []string{e.RunID})
	_, calls["Page"] = s.Page(done, "s", "", 1)
	for name, err := range calls {
		if !errors.Is(err, context.Canceled) {
			return fmt.Errorf("%s with a done context: %v, want context.Canceled", name, err)
		}
	}
	if _, err := s.Sweep(ctx, "s"); !errors.Is(err, ledger.ErrNotFound) {
		return fmt.Errorf("a PutSweep with a done context wrote the sweep (%v)", err)
	}
	if got, err := s.Runs(ctx, []string{e.RunID}); err != nil || len(got) != 0 {
		return fmt.Errorf("an AddEntries with a done context wrote %v (%v)", got, err)
	}
	return nil
}

// Contract: batches larger than any one SQL statement takes are whole.
func testLarge(ctx context.Context, s Store) error {
	const n = 2500
	entries := make([]ledger.Entry, n)
	coords := make([]string, n)
	scores := make([]ledger.Score, n)
	for i := range entries {
		entries[i] = entry("s", fmt.Sprintf("s.h.t%05d.e1", i), 1)
		coords[i] = entries[i].Coord
		scores[i] = ledger.Score{RunID: entries[i].RunID, Scorer: "exact", Version: "1", Value: float64(i % 2), ScoredAt: time.Unix(1, 0).UTC()}
	}
	if err := s.AddEntries(ctx, entries); err != nil {
		return fmt.Errorf("%s: %w", "AddEntries", err)
	}
	if err := s.PutScores(ctx, scores); err != nil {
		return fmt.Errorf("%s: %w", "PutScores", err)
	}
	got, err := s.Coords(ctx, "s", coords)
	if err != nil {
		return fmt.Errorf("%s: %w", "Coords", err)
	}
	if len(got) != n {
		return fmt.Errorf("Coords of %d coordinates gave %d", n, len(got))
	}
	for i, st := range got {
		if st.RunID != entries[i].RunID || len(st.Scores) != 1 || st.Scores[0].Value != float64(i%2) {
			return fmt.Errorf("entry %d: %+v", i, st)
		}
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = entries[i].RunID
	}
	if got, err := s.Runs(ctx, ids); err != nil || len(got) != n {
		return fmt.Errorf("Runs of %d ids: %d (%v)", n, len(got), err)
	}
	return nil
}

// Contract: several writers adding the same entry at once all succeed,
// and it is recorded once.
func testConcurrentAdds(ctx context.Context, s Store) error {
	e := entry("s", "s.h.t.e1", 1)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = s.AddEntries(ctx, []ledger.Entry{e, entry("s", fmt.Sprintf("s.h.w%d.e1", i), 1)}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("writer %d: %v", i, err)
		}
	}
	got, err := s.Coords(ctx, "s", []string{e.Coord})
	if err != nil {
		return fmt.Errorf("%s: %w", "Coords", err)
	}
	if len(got) != 1 {
		return fmt.Errorf("the shared entry is recorded %d times", len(got))
	}
	return nil
}
