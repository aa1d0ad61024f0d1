package pgstore

import (
	"context"
	"strconv"
	"testing"

	"github.com/polyloop/polyloop"
)

// BenchmarkLeaseAcquireRelease is what a lease adds to each Run or Resume
// invocation (never to a step) once the lease session is open: acquiring a
// free run's lease and releasing it.
func BenchmarkLeaseAcquireRelease(b *testing.B) {
	s := openT(b)
	ctx := context.Background()
	owner := polyloop.LeaseOwner{Host: "bench", PID: 1, Token: "tok"}
	for i := 0; b.Loop(); i++ {
		l, err := s.AcquireLease(ctx, "run-"+strconv.Itoa(i%64), polyloop.LeaseRequest{Owner: owner})
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
