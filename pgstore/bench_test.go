package pgstore

import (
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/storetest"
)

// openBench opens a store with a pool of one connection per concurrent run,
// capped at 32 (the shared server allows 100); 0 runs keeps pgxpool's
// default.
func openBench(b *testing.B, runs int) (polyloop.Store, storetest.Commits) {
	var opts Options
	if runs > 0 {
		opts.MaxConns = int32(min(runs, 32))
	}
	s := openWith(b, opts)
	return s, func() int64 { return s.Stats().Commits }
}

// BenchmarkAppend: see storetest.BenchAppend. Each step is two Appends, two
// transactions.
func BenchmarkAppend(b *testing.B) { storetest.BenchAppend(b, openBench) }

// BenchmarkWorkloadW: see storetest.BenchWorkloadW.
func BenchmarkWorkloadW(b *testing.B) { storetest.BenchWorkloadW(b, openBench) }

// BenchmarkResumeRead: see storetest.BenchResumeRead.
func BenchmarkResumeRead(b *testing.B) { storetest.BenchResumeRead(b, openBench) }
