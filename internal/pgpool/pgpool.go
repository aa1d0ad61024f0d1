// Package pgpool opens the pgx connection pools of the packages that keep
// their state in PostgreSQL (pgstore, sweepqueue), the same way for all.
package pgpool

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Open parses dsn (a PostgreSQL URL or keyword/value string, see
// pgxpool.ParseConfig) and returns a pool on it; maxConns, when positive,
// replaces the DSN's pool_max_conns. An error says which of the two failed
// ("parsing the DSN: …", "connecting: …"), for the caller to prefix with its
// own name; it never holds the DSN's password (pgx redacts it).
func Open(ctx context.Context, dsn string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parsing the DSN: %w", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting: %w", err)
	}
	return pool, nil
}
