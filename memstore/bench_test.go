package memstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/storetest"
	"github.com/polyloop/polyloop/memstore"
)

// BenchmarkAppend: each op is one acting step of workload W, written as the
// runner writes it (two Appends), on one run.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	s := memstore.New()
	if err := polyloop.AppendRecords(ctx, s, "w", storetest.Started("w", "bench"), storetest.Intent(1, 1)); err != nil {
		b.Fatal(err)
	}
	seq := int64(2)
	b.ReportAllocs()
	for step := 1; b.Loop(); step++ {
		before, after := storetest.StepBatches(step, seq)
		if err := polyloop.AppendRecords(ctx, s, "w", before...); err != nil {
			b.Fatal(err)
		}
		if err := polyloop.AppendRecords(ctx, s, "w", after...); err != nil {
			b.Fatal(err)
		}
		seq += 4
	}
}

// BenchmarkReadLog: each op reads the log of a run of 1000 acting steps of
// workload W and plans its resume (the fold of the whole log).
func BenchmarkReadLog(b *testing.B) {
	ctx := context.Background()
	s := memstore.New()
	const steps = 1000
	if err := storetest.WriteRun(ctx, s, "w", steps); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		l, err := polyloop.ReadLog(ctx, s, "w")
		if err != nil {
			b.Fatal(err)
		}
		plan, err := polyloop.PlanResume(l)
		if err != nil {
			b.Fatal(err)
		}
		if plan.Action != polyloop.PlanRetryModelCall || len(l.Records) != 2+4*steps {
			b.Fatal(fmt.Sprintf("plan %s of %d records", plan.Action, len(l.Records)))
		}
	}
}
