package anthropicmodel

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

func TestCancelMidFlight(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, response{stall: true})
	c := newTestClient(t, srv.url())
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.Complete(ctx, polyloop.ModelRequest{Messages: userOnly, Params: polyloop.ModelParams{Model: "claude-sonnet-5-5", Retries: 3}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v; want one for which errors.Is(err, context.Canceled)", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("Complete returned %v after the cancellation", elapsed)
	}
	srv.waitAbandoned(t)
	if srv.count() != 1 {
		t.Errorf("a cancelled call was retried: %d requests", srv.count())
	}
}

func TestDeadlineMidFlight(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, response{stall: true})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := newTestClient(t, srv.url()).Complete(ctx, polyloop.ModelRequest{Messages: userOnly,
		Params: polyloop.ModelParams{Model: "claude-sonnet-5-5"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v; want one for which errors.Is(err, context.DeadlineExceeded)", err)
	}
	srv.waitAbandoned(t)
}

func TestCancelWhileWaitingToRetry(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, response{status: 500, fixture: "error_500.json"})
	c := newTestClient(t, srv.url())
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.Complete(ctx, polyloop.ModelRequest{Messages: userOnly,
		Params: polyloop.ModelParams{Model: "claude-sonnet-5-5", Retries: 5, RetryBackoffMS: 10_000}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v; want one for which errors.Is(err, context.Canceled)", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("the backoff outlived the cancellation: %v", elapsed)
	}
}

func TestAttemptTimeout(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, response{stall: true})
	c, err := New(Options{BaseURL: srv.url(), APIKey: "k", Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(context.Background(), polyloop.ModelRequest{Messages: userOnly,
		Params: polyloop.ModelParams{Model: "claude-sonnet-5-5", Retries: 1}})
	var connErr *ConnectionError
	if !errors.As(err, &connErr) || !errors.Is(err, ErrAttemptTimeout) || connErr.Attempts != 2 {
		t.Fatalf("err = %v; want a *ConnectionError caused by ErrAttemptTimeout after 2 attempts", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Error("an attempt timeout reads as the caller's deadline")
	}
}
