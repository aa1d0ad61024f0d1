package sweep

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
)

// A 429 pauses the provider: the first for Initial or the provider's
// Retry-After when longer, each further one twice as long up to Max; a
// success ends the doubling. Other failures change nothing.
func TestGatePauses(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	var notified []time.Duration
	g := newGate("p", ProviderLimit{}, Backoff{Initial: time.Second, Max: 5 * time.Second}, func(_ string, d time.Duration) {
		notified = append(notified, d)
	})
	g.now = func() time.Time { return now }
	limited := fmt.Errorf("call: %w", &httpError{status: 429})
	for _, tt := range []struct {
		err  error
		want time.Duration // the pause from now, after err
	}{
		{limited, time.Second},
		{limited, 2 * time.Second},
		{errors.New("other"), 2 * time.Second}, // unchanged
		{&httpError{status: 500}, 2 * time.Second},
		{limited, 4 * time.Second},
		{limited, 5 * time.Second},
		{limited, 5 * time.Second},
		{nil, 5 * time.Second}, // a success ends the doubling, not the pause
		{limited, 5 * time.Second},
	} {
		g.observe(tt.err)
		if got := g.until.Sub(now); got != tt.want {
			t.Errorf("after %v: paused for %v, want %v", tt.err, got, tt.want)
		}
	}
	now = now.Add(time.Minute) // the pause is over
	g.observe(nil)
	g.observe(limited)
	if got := g.until.Sub(now); got != time.Second {
		t.Errorf("a 429 after a success: %v, want the initial pause", got)
	}
	g.observe(errors.Join(errors.New("x"), &retryAfterError{httpError{429}, 30000}))
	if got := g.until.Sub(now); got != 30*time.Second {
		t.Errorf("with Retry-After 30 s: %v", got)
	}
	if len(notified) != 8 {
		t.Errorf("%d notices of 8 rate limits", len(notified))
	}
}

type retryAfterError struct {
	httpError
	ms int
}

func (e *retryAfterError) DiagFields() map[string]string {
	f := e.httpError.DiagFields()
	f["retry_after_ms"] = fmt.Sprint(e.ms)
	return f
}

// A call waits while its provider is paused: with a done context it
// returns the cancellation without calling the model.
func TestGateWaitsOutThePause(t *testing.T) {
	t.Parallel()
	g := newGate("p", ProviderLimit{}, Backoff{}, nil)
	g.until = time.Now().Add(time.Hour)
	m := &faultModel{}
	lm := &limitedModel{inner: m, gate: g}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := lm.Complete(ctx, polyloop.ModelRequest{}); !errors.Is(err, context.Canceled) || m.calls.Load() != 0 {
		t.Errorf("a paused provider: %v, %d calls", err, m.calls.Load())
	}
	if lm.Describe().Name != m.Describe().Name {
		t.Error("the limited model describes itself as another")
	}
}

// concurrentModel counts the calls under way at once.
type concurrentModel struct {
	faultModel
	now, peak atomic.Int64
}

func (m *concurrentModel) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	n := m.now.Add(1)
	defer m.now.Add(-1)
	for {
		p := m.peak.Load()
		if n <= p || m.peak.CompareAndSwap(p, n) {
			break
		}
	}
	return m.faultModel.Complete(ctx, req)
}

// max_connections bounds the calls to a provider under way at once, across
// the agents that share it.
func TestMaxConnections(t *testing.T) {
	t.Parallel()
	m := &concurrentModel{faultModel: faultModel{delay: 2 * time.Millisecond}}
	s, err := New(Definition{Name: "mc", Agents: []*Agent{testAgent("a", m), testAgent("b", m)}, Tasks: numberTasks(20),
		Concurrency: 8, Providers: map[string]ProviderLimit{"script": {MaxConnections: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background(), RunOptions{Store: memstore.New()})
	if err != nil || res.Progress.Done != 40 {
		t.Fatalf("%+v, %v", res, err)
	}
	if p := m.peak.Load(); p > 2 || p < 1 {
		t.Errorf("%d calls under way at once, the limit is 2", p)
	}
}

// A 429 ends the run llm_error, the sweep retries it as a new attempt, and
// the provider's other calls wait for the pause: the sweep slows down
// instead of failing.
func TestRateLimitedSweepSlowsDown(t *testing.T) {
	t.Parallel()
	m := &faultModel{status: 429, fail: func(task string, _, attempt int) bool { return attempt == 1 && task == "t3" }}
	s, err := New(Definition{Name: "rl", Agents: []*Agent{testAgent("a", m)}, Tasks: numberTasks(6), Concurrency: 2,
		Retry: RetryPolicy{Backoff: time.Millisecond}, RateLimit: Backoff{Initial: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	var evs eventLog
	res, err := s.Run(context.Background(), RunOptions{Store: memstore.New(), Events: evs.add})
	if err != nil || res.Progress.Done != 6 || res.Progress.StopReasons[polyloop.StopCompleted] != 6 || res.Progress.Runs != 7 {
		t.Fatalf("%+v, %v", res.Progress, err)
	}
	if evs.count(EventRateLimited) != 1 || evs.count(EventRetryScheduled) != 1 {
		t.Errorf("%d rate-limit events, %d retries", evs.count(EventRateLimited), evs.count(EventRetryScheduled))
	}
}

// streamModel streams one delta, then answers "ok".
type streamModel struct{ calls atomic.Int64 }

func (m *streamModel) Complete(context.Context, polyloop.ModelRequest) (polyloop.ModelReply, error) {
	m.calls.Add(1)
	return polyloop.ModelReply{Text: "ok"}, nil
}

func (m *streamModel) Stream(ctx context.Context, req polyloop.ModelRequest, deltas func(polyloop.Delta)) (polyloop.ModelReply, error) {
	deltas(polyloop.Delta{Text: "o"})
	return m.Complete(ctx, req)
}

// The gate keeps a client's ability to stream, and a streamed call goes
// through the gate like any other (a paused provider holds it back).
func TestLimitKeepsStreaming(t *testing.T) {
	t.Parallel()
	g := newGate("p", ProviderLimit{}, Backoff{}, nil)
	if _, ok := limit(&faultModel{}, g).(polyloop.StreamingModelClient); ok {
		t.Error("a client that does not stream streams through the gate")
	}
	m := &streamModel{}
	sc, ok := limit(m, g).(polyloop.StreamingModelClient)
	if !ok {
		t.Fatal("a streaming client does not stream through the gate")
	}
	var got []polyloop.Delta
	req := polyloop.ModelRequest{RunID: "s.a.t.e1.a1", Step: 1}
	if _, err := sc.Stream(context.Background(), req, func(d polyloop.Delta) { got = append(got, d) }); err != nil || len(got) != 1 || m.calls.Load() != 1 {
		t.Fatalf("stream: %v, deltas %v, %d calls", err, got, m.calls.Load())
	}
	g.until = time.Now().Add(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := sc.Stream(ctx, req, func(polyloop.Delta) {}); !errors.Is(err, context.Canceled) || m.calls.Load() != 1 {
		t.Errorf("a paused provider: %v, %d calls", err, m.calls.Load())
	}
}
