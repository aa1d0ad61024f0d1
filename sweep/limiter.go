package sweep

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/diag"
)

// ProviderLimit bounds the model calls a sweep makes to one provider.
type ProviderLimit struct {
	// MaxConnections is how many calls may be under way at once (0: no
	// bound).
	MaxConnections int `json:"max_connections,omitempty"`
}

// Backoff is the shared pause of a provider's calls after it answers 429
// (too many requests): the first 429 pauses every call to the provider for
// Initial (or the provider's Retry-After, when longer), each further 429
// while the provider is paused or soon after doubles the pause up to Max,
// and a call that succeeds ends the doubling.
type Backoff struct {
	Initial time.Duration
	Max     time.Duration
}

// Defaults of Backoff.
const (
	DefaultRateLimitInitial = time.Second
	DefaultRateLimitMax     = time.Minute
)

func (b Backoff) withDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = DefaultRateLimitInitial
	}
	if b.Max <= 0 {
		b.Max = DefaultRateLimitMax
	}
	b.Max = max(b.Max, b.Initial)
	return b
}

// gate is the shared limit of one provider's calls: a semaphore of
// MaxConnections and the pause after a 429. The sweep learns of a 429 from
// the error the model client returns: a field http_status of 429 in its
// diagnostic fields (diag.Fielder, which the remote clients' errors
// implement), with retry_after_ms when the provider sent Retry-After.
type gate struct {
	key    string
	sem    chan struct{} // nil: no bound
	cfg    Backoff
	notify func(key string, pause time.Duration)
	now    func() time.Time

	mu      sync.Mutex
	until   time.Time     // calls wait until then
	current time.Duration // the pause the next 429 brings
}

func newGate(key string, limit ProviderLimit, cfg Backoff, notify func(string, time.Duration)) *gate {
	g := &gate{key: key, cfg: cfg.withDefaults(), notify: notify, now: time.Now}
	if limit.MaxConnections > 0 {
		g.sem = make(chan struct{}, limit.MaxConnections)
	}
	return g
}

// acquire waits for a connection to be free, then for the pause to end
// (a pause that began while it waited included).
func (g *gate) acquire(ctx context.Context) error {
	if g.sem != nil {
		select {
		case g.sem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for {
		g.mu.Lock()
		wait := g.until.Sub(g.now())
		g.mu.Unlock()
		if wait <= 0 {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			g.release()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (g *gate) release() {
	if g.sem != nil {
		<-g.sem
	}
}

// observe learns from a call's outcome: a 429 pauses the provider.
func (g *gate) observe(err error) {
	limited, after := rateLimited(err)
	g.mu.Lock()
	if !limited {
		if err == nil {
			g.current = 0
		}
		g.mu.Unlock()
		return
	}
	if g.current == 0 {
		g.current = g.cfg.Initial
	} else {
		g.current = min(2*g.current, g.cfg.Max)
	}
	pause := max(g.current, after)
	until := g.now().Add(pause)
	if until.After(g.until) {
		g.until = until
	}
	g.mu.Unlock()
	if g.notify != nil {
		g.notify(g.key, pause)
	}
}

// rateLimited reports whether err says the provider answered 429, and the
// Retry-After it gave.
func rateLimited(err error) (bool, time.Duration) {
	if err == nil {
		return false, 0
	}
	found, after := false, time.Duration(0)
	walkFielders(err, func(f map[string]string) {
		if f["http_status"] == "429" {
			found = true
			if ms, err := strconv.ParseInt(f["retry_after_ms"], 10, 64); err == nil {
				after = max(after, time.Duration(ms)*time.Millisecond)
			}
		}
	})
	return found, after
}

// walkFielders calls fn with the fields of every diag.Fielder in err's
// tree.
func walkFielders(err error, fn func(map[string]string)) {
	for depth, stack := 0, []error{err}; len(stack) > 0 && depth < 64; depth++ {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if f, ok := e.(diag.Fielder); ok {
			fn(f.DiagFields())
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			stack = append(stack, u.Unwrap()...)
		case interface{ Unwrap() error }:
			if next := u.Unwrap(); next != nil {
				stack = append(stack, next)
			}
		}
	}
}

// limitedModel is a model client whose calls go through its provider's
// gate. It describes itself as the client it wraps, so that a run's
// snapshot does not depend on the sweep's limits.
type limitedModel struct {
	inner polyloop.ModelClient
	gate  *gate
}

// Complete implements polyloop.ModelClient. A cancellation while it waits
// for the gate passes through, as the contract asks.
func (m *limitedModel) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	return m.through(ctx, func() (polyloop.ModelReply, error) { return m.inner.Complete(ctx, req) })
}

// through makes one call through the gate: it waits for a slot, makes the
// call, and lets the gate see how it ended (a cancellation is not the
// provider's answer).
func (m *limitedModel) through(ctx context.Context, call func() (polyloop.ModelReply, error)) (polyloop.ModelReply, error) {
	if err := m.gate.acquire(ctx); err != nil {
		return polyloop.ModelReply{}, err
	}
	defer m.gate.release()
	reply, err := call()
	if ctx.Err() == nil || err == nil {
		m.gate.observe(err)
	}
	return reply, err
}

// streamingLimitedModel is a limitedModel over a client that streams: the
// runner streams through it as it would through the client itself.
type streamingLimitedModel struct {
	*limitedModel
	inner polyloop.StreamingModelClient
}

// Stream implements polyloop.StreamingModelClient, through the gate.
func (m streamingLimitedModel) Stream(ctx context.Context, req polyloop.ModelRequest, deltas func(polyloop.Delta)) (polyloop.ModelReply, error) {
	return m.through(ctx, func() (polyloop.ModelReply, error) { return m.inner.Stream(ctx, req, deltas) })
}

// limit wraps a model client in its provider's gate, keeping its ability
// to stream.
func limit(inner polyloop.ModelClient, g *gate) polyloop.ModelClient {
	m := &limitedModel{inner: inner, gate: g}
	if sc, ok := inner.(polyloop.StreamingModelClient); ok {
		return streamingLimitedModel{limitedModel: m, inner: sc}
	}
	return m
}

// Describe implements polyloop.Describer: the wrapped client's identity.
func (m *limitedModel) Describe() polyloop.Component { return polyloop.Describe(m.inner) }

// KnowsCost implements polyloop.CostReporter for the wrapped client.
func (m *limitedModel) KnowsCost(p polyloop.ModelParams) bool {
	cr, ok := m.inner.(polyloop.CostReporter)
	return ok && cr.KnowsCost(p)
}

var (
	_ polyloop.Describer            = (*limitedModel)(nil)
	_ polyloop.CostReporter         = (*limitedModel)(nil)
	_ polyloop.StreamingModelClient = streamingLimitedModel{}
)
