package pgstore

import (
	"fmt"
	"testing"

	"github.com/polyloop/polyloop/internal/storetest"
)

// BenchmarkAppend: one op is one step of workload W (two Appends, two
// transactions), on one run and spread over 64 concurrent runs.
func BenchmarkAppend(b *testing.B) {
	for _, runs := range []int{1, 64} {
		b.Run(fmt.Sprintf("runs=%d", runs), func(b *testing.B) {
			s := openWith(b, Options{MaxConns: int32(min(runs, 32))})
			storetest.BenchAppend(b, s, func() int64 { return s.Stats().Commits }, runs)
		})
	}
}

// BenchmarkWorkloadW: workload W with the runner. One run of 1000 steps
// (ns/step, commits/step), and 1, 8 and 64 concurrent runs of 50 steps
// (steps/s). Run with -benchtime=1x for one repetition of each.
func BenchmarkWorkloadW(b *testing.B) {
	b.Run("run=1/steps=1000", func(b *testing.B) {
		s := openT(b)
		storetest.BenchRunW(b, s, func() int64 { return s.Stats().Commits }, 1000)
	})
	for _, runs := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("runs=%d/steps=50", runs), func(b *testing.B) {
			s := openWith(b, Options{MaxConns: int32(min(runs, 32))})
			storetest.BenchConcurrentW(b, s, func() int64 { return s.Stats().Commits }, runs, 50)
		})
	}
}

// BenchmarkResumeRead: read a 1000-step log and plan its resume.
func BenchmarkResumeRead(b *testing.B) {
	storetest.BenchReadPlan(b, openT(b), 1000)
}
