package polyloop_test

import (
	"context"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/workload"
	"github.com/polyloop/polyloop/memstore"
)

// workloadLog returns the log of a finished run of workload W of steps
// steps, as the runner writes it, and the rows of each of its Appends, as
// a store that keeps bytes is handed them.
func workloadLog(b *testing.B, steps int) (polyloop.RunLog, [][]polyloop.Row) {
	b.Helper()
	w := workload.W{Steps: steps}
	s := &batchRecorder{Store: memstore.New()}
	ctx := context.Background()
	res, err := w.Runner(s).Run(ctx, "w", w.Agent(), w.Task())
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Check(res); err != nil {
		b.Fatal(err)
	}
	log, err := polyloop.ReadLog(ctx, s, "w")
	if err != nil {
		b.Fatal(err)
	}
	return log, s.batches
}

// rowSink is a store that keeps the rows it is handed and reads them back:
// what is measured is the Runner's side of the seam.
type rowSink struct{ rows []polyloop.Row }

func (s *rowSink) Append(_ context.Context, _ string, rows []polyloop.Row) error {
	s.rows = append(s.rows, rows...)
	return nil
}

func (s *rowSink) ReadRows(context.Context, string) ([]polyloop.Row, error) { return s.rows, nil }

func (s *rowSink) ReadRowsFrom(_ context.Context, _ string, from int64, limit int) ([]polyloop.Row, error) {
	return rowsFrom(s.rows, from, limit), nil
}

// rowsFrom is a slice store's ranged read (Store.ReadRowsFrom).
func rowsFrom(rows []polyloop.Row, from int64, limit int) []polyloop.Row {
	from = min(max(from, 0), int64(len(rows)))
	return rows[from:min(from+int64(limit), int64(len(rows)))]
}

// BenchmarkEncodeLog makes the rows of every record of a 1000-step run of
// workload W as the Runner does for a store that keeps bytes
// (AppendRecords, one per Append of the run: encoded once, checked, with
// checksums): ns/step, B/step (encoded bytes per step).
func BenchmarkEncodeLog(b *testing.B) {
	log, batches := workloadLog(b, 1000)
	steps := float64(len(log.Steps()))
	ctx := context.Background()
	b.ReportAllocs()
	var size int
	for b.Loop() {
		var sink rowSink
		for _, batch := range batches {
			recs := make([]polyloop.Record, len(batch))
			for i, r := range batch {
				recs[i] = r.Record
			}
			if err := polyloop.AppendRecords(ctx, &sink, "w", recs...); err != nil {
				b.Fatal(err)
			}
		}
		size = 0
		for _, r := range sink.rows {
			size += len(r.Data)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/steps, "ns/step")
	b.ReportMetric(float64(size)/steps, "bytes/step")
}

// BenchmarkDecodeLog reads back the rows of a 1000-step run of workload W
// through the Runner's reader (ReadLog: checksums, UTF-8, decoding, tool
// calls resolved): ns/step.
func BenchmarkDecodeLog(b *testing.B) {
	log, batches := workloadLog(b, 1000)
	steps := float64(len(log.Steps()))
	var sink rowSink
	for _, batch := range batches {
		sink.rows = append(sink.rows, batch...)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := polyloop.ReadLog(ctx, &sink, "w"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/steps, "ns/step")
}
