package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/polyloop/polyloop"
)

var (
	// ErrSchemaTooNew is returned by Open when the schema was written by a
	// newer version of this package.
	ErrSchemaTooNew = errors.New("pgstore: database schema is newer than this version of pgstore")
	// ErrNeedsMigration is returned by a read-only Open (Options.ReadOnly)
	// when the schema is missing or older than SchemaVersion: creating or
	// migrating it writes, which a read-only Open never does (and a role
	// that may only SELECT cannot).
	ErrNeedsMigration = errors.New("pgstore: the database schema needs a migration, which a read-only open does not do")
	// ErrNoSchema is the ErrNeedsMigration of a read-only Open that finds
	// no polyloop tables at all (errors.Is holds for both): nothing was
	// ever stored there, which a reader may take for a store without runs.
	ErrNoSchema = errors.New("pgstore: no polyloop tables in the schema")
	// ErrNotConsecutive is polyloop.ErrNotConsecutive, kept for callers that
	// name it here.
	ErrNotConsecutive = polyloop.ErrNotConsecutive
)

// uniqueViolation is the SQLSTATE of a unique or primary key violation.
const uniqueViolation = "23505"

// interpretError is the one place where PostgreSQL errors become the
// library's sentinels: a unique violation on (run_id, seq) means another
// writer appended first, a sequence conflict. When
// ctx is done its error is kept visible for errors.Is. Every other error is
// returned wrapped with what was being done.
func interpretError(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == uniqueViolation {
		return fmt.Errorf("pgstore: %s: %w (%w)", op, polyloop.ErrSeqConflict, err)
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("pgstore: %s: %w (%w)", op, cerr, err)
	}
	return fmt.Errorf("pgstore: %s: %w", op, err)
}

// conflict reports that an Append did not start at the run's next seq.
func conflict(runID string, first, next int64) error {
	return fmt.Errorf("pgstore: run %q: Append starts at seq %d, next seq is %d: %w", runID, first, next, polyloop.ErrSeqConflict)
}
