package sqlrows

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/sweep/ledger"
)

// Querier runs a query and calls each for every row, in order; it returns
// the first error of the query, of each, or of the rows.
type Querier func(ctx context.Context, query string, args []any, each func(Row) error) error

// Execer runs a statement and returns the number of rows it changed.
type Execer func(ctx context.Context, query string, args []any) (int64, error)

// LedgerSQL is the ledger's SQL, the same in both stores: the reads, and
// the writes that a store runs inside one of its transactions. Tables are
// the tables' names as the statements write them (qualified by a schema
// in PostgreSQL).
type LedgerSQL struct {
	D                             Dialect
	Sweeps, Entries, Scores, Runs string
	// Summary, when set, is the select list that reads a summary from
	// the runs table in SummaryColumns order (SummaryColumns when empty).
	Summary string
}

// ReadSweep reads one sweep, or ledger.ErrNotFound.
func (l LedgerSQL) ReadSweep(ctx context.Context, q Querier, name string) (ledger.Sweep, error) {
	var sw ledger.Sweep
	found := false
	err := q(ctx, `SELECT name, manifest, updated_at FROM `+l.Sweeps+` WHERE name = `+l.D.Placeholder(1), []any{name}, func(r Row) error {
		var at int64
		var manifest []byte
		if err := r.Scan(&sw.Name, &manifest, &at); err != nil {
			return err
		}
		sw.Manifest, sw.UpdatedAt, found = manifest, fromNanos(&at), true
		return nil
	})
	if err == nil && !found {
		err = fmt.Errorf("%w: %q", ledger.ErrNotFound, name)
	}
	return sw, err
}

// ReadSweeps lists the sweeps with their counts, newest first.
func (l LedgerSQL) ReadSweeps(ctx context.Context, q Querier) ([]ledger.Info, error) {
	query := strings.NewReplacer("FROM sweeps ", "FROM "+l.Sweeps+" ", "JOIN sweep_runs ", "JOIN "+l.Entries+" ").Replace(SweepInfoQuery)
	var out []ledger.Info
	err := q(ctx, query, nil, func(r Row) error {
		in, err := ScanInfo(r)
		out = append(out, in)
		return err
	})
	return out, err
}

// ReadCoords reads the entries of a sweep's coordinates with their states,
// by coordinate then attempt.
func (l LedgerSQL) ReadCoords(ctx context.Context, q Querier, sweep string, coords []string) ([]ledger.State, error) {
	var entries []ledger.Entry
	for _, chunk := range Chunks(coords) {
		args := append([]any{sweep}, anys(chunk)...)
		query := `SELECT ` + EntryColumns + ` FROM ` + l.Entries + ` WHERE sweep = ` + l.D.Placeholder(1) +
			` AND coord IN (` + l.D.List(2, len(chunk)) + `)`
		if err := l.readEntries(ctx, q, query, args, &entries); err != nil {
			return nil, err
		}
	}
	sortEntries(entries, func(a, b ledger.Entry) bool {
		if a.Coord != b.Coord {
			return a.Coord < b.Coord
		}
		return a.Attempt < b.Attempt
	})
	return l.states(ctx, q, entries)
}

// ReadRuns reads the entries of run ids with their states, by run id.
func (l LedgerSQL) ReadRuns(ctx context.Context, q Querier, ids []string) ([]ledger.State, error) {
	var entries []ledger.Entry
	for _, chunk := range Chunks(ids) {
		query := `SELECT ` + EntryColumns + ` FROM ` + l.Entries + ` WHERE run_id IN (` + l.D.List(1, len(chunk)) + `)`
		if err := l.readEntries(ctx, q, query, anys(chunk), &entries); err != nil {
			return nil, err
		}
	}
	sortEntries(entries, func(a, b ledger.Entry) bool { return a.RunID < b.RunID })
	return l.states(ctx, q, entries)
}

// ReadPage reads a page of a sweep's entries after a run id.
func (l LedgerSQL) ReadPage(ctx context.Context, q Querier, sweep, after string, limit int) ([]ledger.State, error) {
	query := `SELECT ` + EntryColumns + ` FROM ` + l.Entries + ` WHERE sweep = ` + l.D.Placeholder(1) +
		` AND run_id ` + l.D.Binary + ` > ` + l.D.Placeholder(2) + ` ORDER BY run_id ` + l.D.Binary
	args := []any{sweep, after}
	if limit > 0 {
		query += ` LIMIT ` + l.D.Placeholder(3)
		args = append(args, limit)
	}
	var entries []ledger.Entry
	if err := l.readEntries(ctx, q, query, args, &entries); err != nil {
		return nil, err
	}
	return l.states(ctx, q, entries)
}

func (l LedgerSQL) readEntries(ctx context.Context, q Querier, query string, args []any, out *[]ledger.Entry) error {
	return q(ctx, query, args, func(r Row) error {
		e, err := ScanEntry(r)
		*out = append(*out, e)
		return err
	})
}

// states completes entries with their runs' summaries and scores.
func (l LedgerSQL) states(ctx context.Context, q Querier, entries []ledger.Entry) ([]ledger.State, error) {
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.RunID
	}
	sums := map[string]*polyloop.RunSummary{}
	scores := map[string][]ledger.Score{}
	for _, chunk := range Chunks(ids) {
		in := ` WHERE run_id IN (` + l.D.List(1, len(chunk)) + `)`
		cols := l.Summary
		if cols == "" {
			cols = SummaryColumns
		}
		err := q(ctx, `SELECT `+cols+` FROM `+l.Runs+in, anys(chunk), func(r Row) error {
			s, err := ScanSummary(r)
			sums[s.RunID] = &s
			return err
		})
		if err != nil {
			return nil, err
		}
		err = q(ctx, `SELECT `+ScoreColumns+` FROM `+l.Scores+in+` ORDER BY run_id, scorer `+l.D.Binary, anys(chunk), func(r Row) error {
			s, err := ScanScore(r)
			scores[s.RunID] = append(scores[s.RunID], s)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	out := make([]ledger.State, len(entries))
	for i, e := range entries {
		out[i] = ledger.State{Entry: e, Run: sums[e.RunID]}
		out[i].Scores, out[i].Failed = ledger.SplitScores(scores[e.RunID])
	}
	return out, nil
}

// entryRows is how many entries one insert statement takes.
const entryRows = 40

// WriteEntries inserts the entries not yet recorded and fails with
// ledger.ErrConflict when one is recorded with other fields; the caller's
// transaction must then be rolled back.
func (l LedgerSQL) WriteEntries(ctx context.Context, x Execer, q Querier, entries []ledger.Entry) error {
	for len(entries) > 0 {
		chunk := entries[:min(entryRows, len(entries))]
		entries = entries[len(chunk):]
		var rows []string
		var args []any
		for _, e := range chunk {
			rows = append(rows, "("+l.D.List(len(args)+1, 11)+")")
			args = append(args, EntryArgs(e)...)
		}
		n, err := x(ctx, `INSERT INTO `+l.Entries+` (`+EntryColumns+`) VALUES `+strings.Join(rows, ", ")+` ON CONFLICT (run_id) DO NOTHING`, args)
		if err != nil {
			return err
		}
		if n < int64(len(chunk)) {
			if err := l.compareEntries(ctx, q, chunk); err != nil {
				return err
			}
		}
	}
	return nil
}

// compareEntries fails with ErrConflict when a recorded entry of one of
// the given run ids differs from the one given.
func (l LedgerSQL) compareEntries(ctx context.Context, q Querier, given []ledger.Entry) error {
	byID := map[string]ledger.Entry{}
	ids := make([]string, len(given))
	for i, e := range given {
		byID[e.RunID], ids[i] = e, e.RunID
	}
	var recorded []ledger.Entry
	query := `SELECT ` + EntryColumns + ` FROM ` + l.Entries + ` WHERE run_id IN (` + l.D.List(1, len(ids)) + `)`
	if err := l.readEntries(ctx, q, query, anys(ids), &recorded); err != nil {
		return err
	}
	for _, r := range recorded {
		if !r.Equal(byID[r.RunID]) {
			return fmt.Errorf("%w: run %q", ledger.ErrConflict, r.RunID)
		}
	}
	return nil
}

// scoreRows is how many scores one upsert statement takes.
const scoreRows = 50

// WriteScores upserts scores by run and scorer.
func (l LedgerSQL) WriteScores(ctx context.Context, x Execer, scores []ledger.Score) error {
	for len(scores) > 0 {
		chunk := scores[:min(scoreRows, len(scores))]
		scores = scores[len(chunk):]
		var rows []string
		var args []any
		for _, s := range chunk {
			rows = append(rows, "("+l.D.List(len(args)+1, 10)+")")
			args = append(args, ScoreArgs(s)...)
		}
		_, err := x(ctx, `INSERT INTO `+l.Scores+` (`+ScoreColumns+`) VALUES `+strings.Join(rows, ", ")+
			` ON CONFLICT (run_id, scorer) DO UPDATE SET version = excluded.version, description = excluded.description,
			value = excluded.value, explanation = excluded.explanation, grader_run_id = excluded.grader_run_id,
			target_digest = excluded.target_digest, scored_at = excluded.scored_at, error = excluded.error`, args)
		if err != nil {
			return err
		}
	}
	return nil
}

// WriteSweep upserts a sweep by name.
func (l LedgerSQL) WriteSweep(ctx context.Context, x Execer, s ledger.Sweep) error {
	_, err := x(ctx, `INSERT INTO `+l.Sweeps+` (name, manifest, updated_at) VALUES (`+l.D.List(1, 3)+`)
		ON CONFLICT (name) DO UPDATE SET manifest = excluded.manifest, updated_at = excluded.updated_at`,
		[]any{s.Name, []byte(s.Manifest), s.UpdatedAt.UnixNano()})
	return err
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func sortEntries(es []ledger.Entry, less func(a, b ledger.Entry) bool) {
	sort.SliceStable(es, func(i, j int) bool { return less(es[i], es[j]) })
}
