package polyloop_test

import (
	"context"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/bench/workload"
	"github.com/polyloop/polyloop/memstore"
)

// workloadLog returns the log of a finished run of workload W of steps
// steps, as the runner writes it.
func workloadLog(b *testing.B, steps int) polyloop.RunLog {
	b.Helper()
	w := workload.W{Steps: steps}
	s := memstore.New()
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
	return log
}

// BenchmarkEncodeLog encodes every record of a 1000-step run of workload W
// as a store does (EncodeBatch, one record at a time): ns/step, B/step
// (encoded bytes per step).
func BenchmarkEncodeLog(b *testing.B) {
	log := workloadLog(b, 1000)
	steps := float64(len(log.Steps()))
	b.ReportAllocs()
	var size int
	for b.Loop() {
		size = 0
		for i := range log.Records {
			out, err := polyloop.EncodeBatch("w", log.Records[i:i+1])
			if err != nil {
				b.Fatal(err)
			}
			size += len(out[0])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/steps, "ns/step")
	b.ReportMetric(float64(size)/steps, "bytes/step")
}

// BenchmarkDecodeLog decodes every record of a 1000-step run of workload W
// (Record.UnmarshalJSON, as the stores' ReadLog does): ns/step.
func BenchmarkDecodeLog(b *testing.B) {
	log := workloadLog(b, 1000)
	steps := float64(len(log.Steps()))
	lines := make([][]byte, len(log.Records))
	for i, r := range log.Records {
		var err error
		if lines[i], err = r.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, line := range lines {
			var r polyloop.Record
			if err := r.UnmarshalJSON(line); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/steps, "ns/step")
}
