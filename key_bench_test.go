package polyloop_test

import (
	"testing"

	"github.com/polyloop/polyloop"
)

// BenchmarkIdempotencyKey is the cost the key adds to each action intent.
func BenchmarkIdempotencyKey(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = polyloop.IdempotencyKeyFor("run-0123456789", "a12.3", 1)
	}
}
