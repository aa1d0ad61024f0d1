package providertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/provider"
)

// TestCancellation checks that a cancellation or the caller's deadline ends
// a call promptly, mid-flight or while waiting to retry, releasing the
// request and reporting ctx.Err(); and that an attempt timeout is a
// retried connection failure, not the caller's deadline.
func TestCancellation[P provider.Package](t *testing.T, h Harness[P]) {
	t.Run("cancel mid-flight", func(t *testing.T) { t.Parallel(); cancelMidFlight(t, h) })
	t.Run("deadline mid-flight", func(t *testing.T) { t.Parallel(); deadlineMidFlight(t, h) })
	t.Run("cancel while waiting to retry", func(t *testing.T) { t.Parallel(); cancelWhileWaiting(t, h) })
	t.Run("attempt timeout", func(t *testing.T) { t.Parallel(); attemptTimeout(t, h) })
}

func cancelMidFlight[P provider.Package](t *testing.T, h Harness[P]) {
	srv := h.Serve(t, Response{Stall: true})
	c := h.Client(t, srv.URL())
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.Complete(ctx, h.Request(polyloop.ModelParams{Retries: 3}))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v; want one for which errors.Is(err, context.Canceled)", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("Complete returned %v after the cancellation", elapsed)
	}
	srv.WaitAbandoned(t)
	if srv.Count() != 1 {
		t.Errorf("a cancelled call was retried: %d requests", srv.Count())
	}
}

func deadlineMidFlight[P provider.Package](t *testing.T, h Harness[P]) {
	srv := h.Serve(t, Response{Stall: true})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := h.Client(t, srv.URL()).Complete(ctx, h.Request(polyloop.ModelParams{}))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v; want one for which errors.Is(err, context.DeadlineExceeded)", err)
	}
	srv.WaitAbandoned(t)
}

func cancelWhileWaiting[P provider.Package](t *testing.T, h Harness[P]) {
	srv := h.Serve(t, h.ErrorStatus)
	c := h.Client(t, srv.URL())
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.Complete(ctx, h.Request(polyloop.ModelParams{Retries: 5, RetryBackoffMS: 10_000}))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v; want one for which errors.Is(err, context.Canceled)", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("the backoff outlived the cancellation: %v", elapsed)
	}
}

func attemptTimeout[P provider.Package](t *testing.T, h Harness[P]) {
	srv := h.Serve(t, Response{Stall: true})
	c := h.must(t, Options{BaseURL: srv.URL(), APIKey: "k", Timeout: 50 * time.Millisecond})
	_, err := c.Complete(context.Background(), h.Request(polyloop.ModelParams{Retries: 1}))
	var connErr *provider.ConnectionError[P]
	if !errors.As(err, &connErr) || !errors.Is(err, h.ErrAttemptTimeout) || connErr.Attempts != 2 {
		t.Fatalf("err = %v; want a *ConnectionError caused by ErrAttemptTimeout after 2 attempts", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Error("an attempt timeout reads as the caller's deadline")
	}
}
