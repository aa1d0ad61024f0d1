package providertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/provider"
)

// CheckConnectionReuse makes calls from a fixed number of goroutines at
// once, each pausing a millisecond between its calls as a run does between
// its model calls, against a fake server that counts the connections it
// accepts: a client whose Options.Connections is that number (or left to
// its default, which is larger) must reuse its connections call after
// call. The bound is twice that number, not the number itself: a call
// that finds no idle connection dials one, and takes whichever comes
// first, the dialled one or one that a finished call gives back, so a few
// extra connections are opened (and closed again when the pool is full).
// On http.DefaultTransport, which keeps 2 idle connections per host, most
// of the calls open a new one.
func CheckConnectionReuse[P provider.Package](t *testing.T, h Harness[P]) {
	const concurrency, perGoroutine = 8, 25
	for name, connections := range map[string]int{"sized": concurrency, "default": 0} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := h.Serve(t, h.OK)
			c := h.must(t, Options{BaseURL: srv.URL(), APIKey: "test-key", Model: h.Model, Connections: connections})
			var wg sync.WaitGroup
			errs := make(chan error, concurrency)
			for range concurrency {
				wg.Go(func() {
					for range perGoroutine {
						if _, err := c.Complete(context.Background(), h.Request(polyloop.ModelParams{})); err != nil {
							errs <- err
							return
						}
						time.Sleep(time.Millisecond)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if got := srv.Connections(); got > 2*concurrency {
				t.Errorf("%d calls, %d at a time, opened %d connections; want at most %d", concurrency*perGoroutine, concurrency, got, 2*concurrency)
			}
		})
	}
}
