package pgstore

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/workload"
)

// TestRunnerConnectionLoss runs workload W through the runner and kills the
// connection in the middle of its fifth Append: Run fails with a
// *polyloop.PersistenceError that is not a conflict, and a Resume on a new
// connection finishes the run from what the database holds.
func TestRunnerConnectionLoss(t *testing.T) {
	ctx := context.Background()
	s := openT(t)
	admin, err := pgx.Connect(ctx, dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var appends atomic.Int32
	s.afterRead = func(ctx context.Context, conn *pgx.Conn) error {
		if appends.Add(1) != 5 {
			return nil
		}
		_, err := admin.Exec(ctx, "SELECT pg_terminate_backend($1)", conn.PgConn().PID())
		return err
	}
	w := workload.W{Steps: 4}
	_, err = w.Runner(s).Run(ctx, "lost", w.Agent(), w.Task())
	var pe *polyloop.PersistenceError
	if !errors.As(err, &pe) || errors.Is(err, polyloop.ErrSeqConflict) {
		t.Fatalf("Run with a lost connection: %v, want a *PersistenceError that is not a conflict", err)
	}
	s.afterRead = nil
	l, err := polyloop.ReadLog(ctx, s, "lost")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := polyloop.PlanResume(l); err != nil {
		t.Fatalf("log after the lost connection: %v", err)
	}
	res, err := w.Runner(s).Resume(ctx, "lost", w.Agent())
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if err := w.Check(res); err != nil {
		t.Fatal(err)
	}
}
