package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/polyloop/polyloop/internal/sqlrows"
	"github.com/polyloop/polyloop/sweep/ledger"
)

// The sweep ledger (ledger.Ledger) in the store's schema (version 6).
// Each write is one transaction; reads go through the pool.

var _ ledger.Ledger = (*Store)(nil)

func (s *Store) ledgerSQL() sqlrows.LedgerSQL {
	t := func(name string) string { return pgx.Identifier{s.schema, name}.Sanitize() }
	return sqlrows.LedgerSQL{D: dialect, Sweeps: t("sweeps"), Entries: t("sweep_runs"), Scores: t("scores"), Runs: t("runs")}
}

// PutSweep implements ledger.Ledger.
func (s *Store) PutSweep(ctx context.Context, sw ledger.Sweep) error {
	return s.ledgerWrite(ctx, fmt.Sprintf("put sweep %q", sw.Name), func(x sqlrows.Execer, _ sqlrows.Querier) error {
		return s.ledgerSQL().WriteSweep(ctx, x, sw)
	})
}

// AddEntries implements ledger.Ledger.
func (s *Store) AddEntries(ctx context.Context, entries []ledger.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	return s.ledgerWrite(ctx, fmt.Sprintf("add %d sweep entries", len(entries)), func(x sqlrows.Execer, q sqlrows.Querier) error {
		return s.ledgerSQL().WriteEntries(ctx, x, q, entries)
	})
}

// PutScores implements ledger.Ledger.
func (s *Store) PutScores(ctx context.Context, scores []ledger.Score) error {
	if len(scores) == 0 {
		return nil
	}
	return s.ledgerWrite(ctx, fmt.Sprintf("put %d scores", len(scores)), func(x sqlrows.Execer, _ sqlrows.Querier) error {
		return s.ledgerSQL().WriteScores(ctx, x, scores)
	})
}

// Sweep implements ledger.Ledger.
func (s *Store) Sweep(ctx context.Context, name string) (ledger.Sweep, error) {
	sw, err := s.ledgerSQL().ReadSweep(ctx, s.querier(), name)
	return sw, ledgerError(ctx, "read sweep "+name, err)
}

// Sweeps implements ledger.Ledger.
func (s *Store) Sweeps(ctx context.Context) ([]ledger.Info, error) {
	out, err := s.ledgerSQL().ReadSweeps(ctx, s.querier())
	return out, ledgerError(ctx, "list sweeps", err)
}

// Coords implements ledger.Ledger.
func (s *Store) Coords(ctx context.Context, sweep string, coords []string) ([]ledger.State, error) {
	out, err := s.ledgerSQL().ReadCoords(ctx, s.querier(), sweep, coords)
	return out, ledgerError(ctx, "read sweep "+sweep, err)
}

// Runs implements ledger.Ledger.
func (s *Store) Runs(ctx context.Context, runIDs []string) ([]ledger.State, error) {
	out, err := s.ledgerSQL().ReadRuns(ctx, s.querier(), runIDs)
	return out, ledgerError(ctx, "read sweep entries", err)
}

// Page implements ledger.Ledger.
func (s *Store) Page(ctx context.Context, sweep, after string, limit int) ([]ledger.State, error) {
	out, err := s.ledgerSQL().ReadPage(ctx, s.querier(), sweep, after, limit)
	return out, ledgerError(ctx, "read sweep "+sweep, err)
}

// ledgerError wraps a ledger error once, keeping the ledger's sentinels
// visible.
func ledgerError(ctx context.Context, what string, err error) error {
	if err == nil || errors.Is(err, ledger.ErrNotFound) || errors.Is(err, ledger.ErrConflict) {
		return err
	}
	return interpretError(ctx, what, err)
}

// pgQuerier is what a pool and a transaction offer.
type pgQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func (s *Store) querier() sqlrows.Querier { return querierOf(s.pool) }

func querierOf(db pgQuerier) sqlrows.Querier {
	return func(ctx context.Context, query string, args []any, each func(sqlrows.Row) error) error {
		rows, err := db.Query(ctx, query, args...)
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

// ledgerWrite runs write in one transaction.
func (s *Store) ledgerWrite(ctx context.Context, what string, write func(sqlrows.Execer, sqlrows.Querier) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return interpretError(ctx, what, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	x := func(ctx context.Context, query string, args []any) (int64, error) {
		tag, err := tx.Exec(ctx, query, args...)
		return tag.RowsAffected(), err
	}
	if err := write(x, querierOf(tx)); err != nil {
		return ledgerError(ctx, what, err)
	}
	return interpretError(ctx, what, tx.Commit(ctx))
}
