package pgstore

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/sqlrows"
	"github.com/polyloop/polyloop/internal/storetest"
)

// rawSchema is raw access to a store's records table, behind its back.
type rawSchema struct{ s *Store }

func (r rawSchema) table() string { return pgx.Identifier{r.s.schema, "records"}.Sanitize() }

func (r rawSchema) Rows(t testing.TB, runID string) []polyloop.Row {
	t.Helper()
	rows, err := r.s.pool.Query(context.Background(), `SELECT seq, kind, data, crc FROM `+r.table()+` WHERE run_id = $1 ORDER BY seq`, runID)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (polyloop.Row, error) {
		return sqlrows.ScanRecord(row)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (r rawSchema) Put(t testing.TB, runID string, row polyloop.Row) {
	t.Helper()
	if _, err := r.s.pool.Exec(context.Background(), `INSERT INTO `+r.table()+` (run_id, seq, kind, data, crc) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (run_id, seq) DO UPDATE SET kind = EXCLUDED.kind, data = EXCLUDED.data, crc = EXCLUDED.crc`,
		runID, row.Seq, row.Kind, row.Data, crcArg(row)); err != nil {
		t.Fatal(err)
	}
}

func (r rawSchema) Delete(t testing.TB, runID string, seq int64) {
	t.Helper()
	if _, err := r.s.pool.Exec(context.Background(), `DELETE FROM `+r.table()+` WHERE run_id = $1 AND seq = $2`, runID, seq); err != nil {
		t.Fatal(err)
	}
}

// TestCorruption runs the shared corruption checks on hand-edited rows.
func TestCorruption(t *testing.T) {
	dsn(t)
	storetest.Corruption(t, func(t *testing.T) (polyloop.Store, storetest.Tamper) {
		s := openT(t)
		return s, rawSchema{s}
	})
}

// crcArg is the crc column's value for r: NULL for a row without checksum.
func crcArg(r polyloop.Row) *int64 {
	if r.Unchecked {
		return nil
	}
	c := sqlrows.CRC(r)
	return &c
}
