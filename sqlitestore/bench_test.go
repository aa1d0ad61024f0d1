package sqlitestore_test

import (
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/storetest"
)

// openBench opens a store in a fresh file, whatever the number of runs.
func openBench(b *testing.B, _ int) (polyloop.Store, storetest.Commits) {
	s := newStore(b)
	return s, func() int64 { return s.Stats().Commits }
}

// BenchmarkAppend: see storetest.BenchAppend. With 64 concurrent runs,
// group commit shares syncs.
func BenchmarkAppend(b *testing.B) { storetest.BenchAppend(b, openBench) }

// BenchmarkWorkloadW: see storetest.BenchWorkloadW.
func BenchmarkWorkloadW(b *testing.B) { storetest.BenchWorkloadW(b, openBench) }

// BenchmarkResumeRead: see storetest.BenchResumeRead.
func BenchmarkResumeRead(b *testing.B) { storetest.BenchResumeRead(b, openBench) }
