package pgstore

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/storetest"
)

// openBench opens a store with a pool of one connection per concurrent run,
// capped at 32 (the shared server allows 100); 0 runs keeps pgxpool's
// default.
func openBench(b *testing.B, runs int) (polyloop.Store, storetest.Commits) {
	var opts Options
	if runs > 0 {
		opts.MaxConns = int32(min(runs, 32))
	}
	s := openWith(b, opts)
	return s, func() int64 { return s.Stats().Commits }
}

// BenchmarkAppend: see storetest.BenchAppend. On one run each step is two
// Appends, two transactions; concurrent runs share them.
func BenchmarkAppend(b *testing.B) { storetest.BenchAppend(b, openBench) }

// BenchmarkWorkloadW: see storetest.BenchWorkloadW.
func BenchmarkWorkloadW(b *testing.B) { storetest.BenchWorkloadW(b, openBench) }

// BenchmarkResumeRead: see storetest.BenchResumeRead.
func BenchmarkResumeRead(b *testing.B) { storetest.BenchResumeRead(b, openBench) }

// BenchmarkCommitFloor measures the floor under an Append: each op is one
// round trip that commits a one-row write (its own implicit transaction,
// synced like an Append's), on a table of the store's schema.
func BenchmarkCommitFloor(b *testing.B) {
	s := openT(b)
	ctx := context.Background()
	floor := pgx.Identifier{s.schema, "floor"}.Sanitize()
	if _, err := s.pool.Exec(ctx, `CREATE TABLE `+floor+` (id int PRIMARY KEY, n bigint NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	q := `INSERT INTO ` + floor + ` (id, n) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET n = EXCLUDED.n`
	b.ResetTimer()
	for i := range b.N {
		if _, err := conn.Exec(ctx, q, int64(i)); err != nil {
			b.Fatal(err)
		}
	}
}
