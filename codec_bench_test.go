package polyloop_test

import (
	"context"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/bench/workload"
	"github.com/polyloop/polyloop/memstore"
)

// workloadLog returns the log of a finished run of workload W of steps
// steps, as the runner writes it, and the batch of each of its Appends.
func workloadLog(b *testing.B, steps int) (polyloop.RunLog, [][]polyloop.Record) {
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
	log, err := s.ReadLog(ctx, "w")
	if err != nil {
		b.Fatal(err)
	}
	return log, s.batches
}

// BenchmarkEncodeLog encodes every record of a 1000-step run of workload W
// as a store does (EncodeBatch, one batch per Append of the runner):
// ns/step, B/step (encoded bytes per step).
func BenchmarkEncodeLog(b *testing.B) {
	log, batches := workloadLog(b, 1000)
	steps := float64(len(log.Steps()))
	b.ReportAllocs()
	var size int
	for b.Loop() {
		size = 0
		for _, batch := range batches {
			out, err := polyloop.EncodeBatch("w", batch)
			if err != nil {
				b.Fatal(err)
			}
			for _, o := range out {
				size += len(o)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/steps, "ns/step")
	b.ReportMetric(float64(size)/steps, "bytes/step")
}

// BenchmarkDecodeLog decodes every record of a 1000-step run of workload W,
// as a store encodes them (Record.UnmarshalJSON, as the stores' ReadLog
// does, and ResolveToolCall): ns/step.
func BenchmarkDecodeLog(b *testing.B) {
	log, batches := workloadLog(b, 1000)
	steps := float64(len(log.Steps()))
	var lines [][]byte
	for _, batch := range batches {
		out, err := polyloop.EncodeBatch("w", batch)
		if err != nil {
			b.Fatal(err)
		}
		lines = append(lines, out...)
	}
	b.ReportAllocs()
	records := make([]polyloop.Record, 0, len(lines))
	for b.Loop() {
		records = records[:0]
		for _, line := range lines {
			var r polyloop.Record
			if err := r.UnmarshalJSON(line); err != nil {
				b.Fatal(err)
			}
			records = append(records, polyloop.ResolveToolCall(records, r))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/steps, "ns/step")
}
