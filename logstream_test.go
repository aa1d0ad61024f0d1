package polyloop_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runfixture"
	"github.com/polyloop/polyloop/scriptmodel"
)

// chunkFaults is a store that keeps bytes (so that action intents refer to
// their tool calls, across chunk boundaries too) and breaks its ranged
// read as told.
type chunkFaults struct {
	countingRows
	skip, repeat, unbounded bool
	reads                   int
}

func (s *chunkFaults) ReadRowsFrom(ctx context.Context, runID string, from int64, limit int) ([]polyloop.Row, error) {
	s.reads++
	switch {
	case s.skip && from > 0:
		from++
	case s.repeat && from > 0:
		from--
	case s.unbounded:
		limit = len(s.rows)
	}
	return s.countingRows.ReadRowsFrom(ctx, runID, from, limit)
}

// streamedRun is a run of n steps on a store that keeps bytes.
func streamedRun(t *testing.T, n int) *chunkFaults {
	t.Helper()
	st := &chunkFaults{}
	turns := make([]scriptmodel.Turn, 0, n+1)
	for i := range n {
		turns = append(turns, runfixture.Echo(fmt.Sprintf("c%d", i), fmt.Sprintf("step %d", i+1)))
	}
	turns = append(turns, scriptmodel.Reply("done"))
	agent := runfixture.Agent("streamed", "")
	agent.Limits.MaxSteps = n + 1
	runfixture.Run(t, runfixture.Runner(st, runfixture.NewClock(runfixture.Base), 0.000001, turns...), "r", agent, "a task")
	return st
}

func collect(t *testing.T, s *polyloop.LogStream) ([]polyloop.Record, error) {
	t.Helper()
	var out []polyloop.Record
	for s.Next() {
		out = append(out, s.Record())
	}
	return out, s.Err()
}

// TestLogStreamIsReadLog: a log several chunks long reads through the
// stream, a chunk at a time, as ReadLog reads it — the action intents that
// refer to a tool call of a model result in the chunk before resolved —
// and ObserveStream folds it as ObserveLog, ComputeTotals and PlanResume
// do.
func TestLogStreamIsReadLog(t *testing.T) {
	ctx := context.Background()
	st := streamedRun(t, 200)
	log, err := polyloop.ReadLog(ctx, st, "r")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(log.Records); n < 3*polyloop.LogChunkRows {
		t.Fatalf("%d records: want several chunks", n)
	}
	st.reads = 0
	got, err := collect(t, polyloop.StreamLog(ctx, st, "r"))
	if err != nil {
		t.Fatal(err)
	}
	if want := len(log.Records)/polyloop.LogChunkRows + 1; st.reads != want {
		t.Errorf("%d ranged reads for %d records, want %d", st.reads, len(log.Records), want)
	}
	if len(got) != len(log.Records) {
		t.Fatalf("the stream read %d records, ReadLog %d", len(got), len(log.Records))
	}
	for i := range got {
		a, _ := got[i].MarshalJSON()
		b, _ := log.Records[i].MarshalJSON()
		if string(a) != string(b) {
			t.Fatalf("record %d differs:\nstream  %s\nReadLog %s", i, a, b)
		}
	}
	end, err := polyloop.ObserveStream(polyloop.StreamLog(ctx, st, "r"), nil)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := polyloop.PlanResume(log)
	if err != nil {
		t.Fatal(err)
	}
	if end.Records != len(log.Records) || end.Totals != polyloop.ComputeTotals(log) || end.Plan == nil || !reflect.DeepEqual(*end.Plan, plan) || !reflect.DeepEqual(end.Finished, log.Finished()) {
		t.Errorf("ObserveStream ends with %d records, totals %+v, plan %+v; the log's are %d, %+v, %+v", end.Records, end.Totals, end.Plan, len(log.Records), polyloop.ComputeTotals(log), plan)
	}
}

// TestLogStreamCatchesBrokenChunks: a store whose ranged read skips or
// repeats a row at a chunk boundary, or ignores its bound, gives a
// *CorruptLogError naming the run, never a log with a row missing or
// twice.
func TestLogStreamCatchesBrokenChunks(t *testing.T) {
	ctx := context.Background()
	for name, set := range map[string]func(*chunkFaults){
		"skips":     func(s *chunkFaults) { s.skip = true },
		"repeats":   func(s *chunkFaults) { s.repeat = true },
		"unbounded": func(s *chunkFaults) { s.unbounded = true },
	} {
		t.Run(name, func(t *testing.T) {
			st := streamedRun(t, 100)
			set(st)
			got, err := collect(t, polyloop.StreamLog(ctx, st, "r"))
			var corrupt *polyloop.CorruptLogError
			if !errors.As(err, &corrupt) || corrupt.RunID != "r" {
				t.Fatalf("read %d records, error %v: want a *CorruptLogError of run r", len(got), err)
			}
			if len(got) > polyloop.LogChunkRows {
				t.Errorf("%d records read before the break, more than a chunk", len(got))
			}
			if _, err := polyloop.ReadLog(ctx, st, "r"); err != nil {
				t.Errorf("ReadLog, which reads the rows whole: %v", err)
			}
		})
	}
}

// TestLogStreamCorruptRow: a row whose bytes changed in the third chunk
// ends the stream there, after the records before it.
func TestLogStreamCorruptRow(t *testing.T) {
	st := streamedRun(t, 200)
	bad := 2*polyloop.LogChunkRows + 5
	st.rows[bad].Data = append([]byte(nil), st.rows[bad].Data...)
	st.rows[bad].Data[len(st.rows[bad].Data)-2] ^= 1
	got, err := collect(t, polyloop.StreamLog(context.Background(), st, "r"))
	var corrupt *polyloop.CorruptLogError
	if !errors.As(err, &corrupt) || corrupt.Seq != int64(bad) || len(got) != bad {
		t.Fatalf("read %d records, error %v: want %d records and a *CorruptLogError at seq %d", len(got), err, bad, bad)
	}
}
