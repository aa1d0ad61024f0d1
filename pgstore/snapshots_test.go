package pgstore

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/polyloop/polyloop/internal/storetest"
)

// The store keeps each configuration snapshot once (design record 0045).
func TestSnapshotsStoredOnce(t *testing.T) {
	s := openT(t)
	storetest.SnapshotsOnce(t, s, func(t *testing.T) int {
		var n int
		if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM `+pgx.Identifier{s.schema, "snapshots"}.Sanitize()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	})
}
