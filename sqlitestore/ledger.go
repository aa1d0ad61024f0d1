package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/polyloop/polyloop/internal/sqlrows"
	"github.com/polyloop/polyloop/sweep/ledger"
)

// The sweep ledger (ledger.Ledger) in the same file as the runs (schema
// version 4). Its writes go through the writer, so that they share the
// group commit of the runs' Appends: each is atomic (one savepoint of a
// batch's transaction, or the whole transaction) and durable when it
// returns. Its reads use the read connections.

var _ ledger.Ledger = (*Store)(nil)

var ledgerSQL = sqlrows.LedgerSQL{D: dialect, Sweeps: "sweeps", Entries: "sweep_runs", Scores: "scores", Runs: "runs", Summary: summaryColumns}

// PutSweep implements ledger.Ledger.
func (s *Store) PutSweep(ctx context.Context, sw ledger.Sweep) error {
	return s.ledgerWrite(ctx, fmt.Sprintf("put sweep %q", sw.Name), func(ctx context.Context, x sqlrows.Execer, _ sqlrows.Querier) error {
		return ledgerSQL.WriteSweep(ctx, x, sw)
	})
}

// AddEntries implements ledger.Ledger.
func (s *Store) AddEntries(ctx context.Context, entries []ledger.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	return s.ledgerWrite(ctx, fmt.Sprintf("add %d sweep entries", len(entries)), func(ctx context.Context, x sqlrows.Execer, q sqlrows.Querier) error {
		return ledgerSQL.WriteEntries(ctx, x, q, entries)
	})
}

// PutScores implements ledger.Ledger.
func (s *Store) PutScores(ctx context.Context, scores []ledger.Score) error {
	if len(scores) == 0 {
		return nil
	}
	return s.ledgerWrite(ctx, fmt.Sprintf("put %d scores", len(scores)), func(ctx context.Context, x sqlrows.Execer, _ sqlrows.Querier) error {
		return ledgerSQL.WriteScores(ctx, x, scores)
	})
}

// Sweep implements ledger.Ledger.
func (s *Store) Sweep(ctx context.Context, name string) (ledger.Sweep, error) {
	if err := s.usable(ctx, "read sweep "+name); err != nil {
		return ledger.Sweep{}, err
	}
	sw, err := ledgerSQL.ReadSweep(ctx, s.querier(), name)
	return sw, s.ledgerError(ctx, "read sweep "+name, err)
}

// Sweeps implements ledger.Ledger.
func (s *Store) Sweeps(ctx context.Context) ([]ledger.Info, error) {
	if err := s.usable(ctx, "list sweeps"); err != nil {
		return nil, err
	}
	out, err := ledgerSQL.ReadSweeps(ctx, s.querier())
	return out, s.ledgerError(ctx, "list sweeps", err)
}

// Coords implements ledger.Ledger.
func (s *Store) Coords(ctx context.Context, sweep string, coords []string) ([]ledger.State, error) {
	if err := s.usable(ctx, "read sweep "+sweep); err != nil {
		return nil, err
	}
	out, err := ledgerSQL.ReadCoords(ctx, s.querier(), sweep, coords)
	return out, s.ledgerError(ctx, "read sweep "+sweep, err)
}

// Runs implements ledger.Ledger.
func (s *Store) Runs(ctx context.Context, runIDs []string) ([]ledger.State, error) {
	if err := s.usable(ctx, "read sweep entries"); err != nil {
		return nil, err
	}
	out, err := ledgerSQL.ReadRuns(ctx, s.querier(), runIDs)
	return out, s.ledgerError(ctx, "read sweep entries", err)
}

// Page implements ledger.Ledger.
func (s *Store) Page(ctx context.Context, sweep, after string, limit int) ([]ledger.State, error) {
	if err := s.usable(ctx, "read sweep "+sweep); err != nil {
		return nil, err
	}
	out, err := ledgerSQL.ReadPage(ctx, s.querier(), sweep, after, limit)
	return out, s.ledgerError(ctx, "read sweep "+sweep, err)
}

// ledgerError wraps a ledger read's error once, keeping the ledger's
// sentinels and the context's error visible.
func (s *Store) ledgerError(ctx context.Context, what string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ledger.ErrNotFound), errors.Is(err, ledger.ErrConflict):
		return err
	case ctx.Err() != nil:
		return fmt.Errorf("sqlitestore: %s: %w (%v)", what, ctx.Err(), err)
	}
	return interpretError(what, err)
}

// querier runs queries on the read connections.
func (s *Store) querier() sqlrows.Querier { return dbQuerier(s.read) }

// queryer is what both *sql.DB and *sql.Tx offer.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func dbQuerier(db queryer) sqlrows.Querier {
	return func(ctx context.Context, query string, args []any, each func(sqlrows.Row) error) error {
		rows, err := db.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := each(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	}
}

// ledgerWrite runs a ledger write in the writer, inside a batch's
// transaction: it waits for the commit, like Append.
func (s *Store) ledgerWrite(ctx context.Context, what string, write func(context.Context, sqlrows.Execer, sqlrows.Querier) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", what, err)
	}
	req := &request{what: what, done: make(chan error, 1)}
	req.exec = func(ctx context.Context, tx *sql.Tx) error {
		x := func(ctx context.Context, query string, args []any) (int64, error) {
			res, err := tx.ExecContext(ctx, query, args...)
			if err != nil {
				return 0, err
			}
			return res.RowsAffected()
		}
		err := write(ctx, x, dbQuerier(tx))
		if err == nil || errors.Is(err, ledger.ErrConflict) {
			return err
		}
		return interpretError(what, err)
	}
	return s.submit(ctx, req)
}
