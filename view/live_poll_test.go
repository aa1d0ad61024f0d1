package view

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runfixture"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
)

// rowCounter counts the rows a store hands over. It is not a LeaseProber:
// the view reads no holder.
type rowCounter struct {
	*memstore.Store
	rows int
}

func (c *rowCounter) ReadRows(ctx context.Context, runID string) ([]polyloop.Row, error) {
	rows, err := c.Store.ReadRows(ctx, runID)
	c.rows += len(rows)
	return rows, err
}

func (c *rowCounter) ReadRowsFrom(ctx context.Context, runID string, from int64, limit int) ([]polyloop.Row, error) {
	rows, err := c.Store.ReadRowsFrom(ctx, runID, from, limit)
	c.rows += len(rows)
	return rows, err
}

// TestUnchangedPollReadsNoLog: a live stream's poll of a log that has not
// grown since its last push (and whose holder did not come or go) reads
// no row, whatever the log's length (it asks for the row after the last
// one sent, and there is none).
func TestUnchangedPollReadsNoLog(t *testing.T) {
	st := memstore.New()
	const n = 300
	turns := make([]scriptmodel.Turn, 0, n+1)
	for i := range n + 1 {
		turns = append(turns, runfixture.Echo(fmt.Sprintf("c%d", i), "output"))
	}
	agent := runfixture.Agent("long", "")
	agent.Limits.MaxSteps = n + 2
	runfixture.Crashed(t, st, runfixture.NewClock(runfixture.Base), 4*n+2, "open", agent, "a long task", turns...)
	c := &rowCounter{Store: st}
	s, err := New(Options{Store: c, StepsPerPage: 100})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var seq int
	var running bool
	calls := map[string]bool{}
	if _, err := s.pushRecords(ctx, io.Discard, "open", 0, &seq, calls, &running); err != nil {
		t.Fatal(err)
	}
	if seq < 4*n {
		t.Fatalf("the first push sent %d records of a log of more than %d", seq, 4*n)
	}
	c.rows = 0
	for range 3 {
		if _, err := s.pushRecords(ctx, io.Discard, "open", 0, &seq, calls, &running); err != nil {
			t.Fatal(err)
		}
	}
	if c.rows != 0 {
		t.Errorf("three polls of an unchanged log of %d records read %d rows", seq, c.rows)
	}
}
