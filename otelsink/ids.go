package otelsink

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"math/rand/v2"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// IDGenerator returns the span id generator a TracerProvider needs for the
// sink to export each run's root span (see Resumed runs in the package
// documentation): it gives the root span the ids of the run's anchor, and
// asks base for every other id (nil base: random ids, as the SDK's default
// does). Install it with sdktrace.WithIDGenerator; NewFromEnv does.
func IDGenerator(base sdktrace.IDGenerator) sdktrace.IDGenerator {
	if base == nil {
		base = newRandomIDs()
	}
	return &anchorIDs{base: base}
}

// anchorIDs hands out the anchor's ids to a span started with a context
// from withAnchorIDs, and base's ids to every other.
type anchorIDs struct{ base sdktrace.IDGenerator }

type anchorKey struct{}

// withAnchorIDs asks the IDGenerator, if the provider has it, to give the
// span started with ctx the ids of sc.
func withAnchorIDs(ctx context.Context, sc trace.SpanContext) context.Context {
	return context.WithValue(ctx, anchorKey{}, sc)
}

func (g *anchorIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if sc, ok := ctx.Value(anchorKey{}).(trace.SpanContext); ok {
		return sc.TraceID(), sc.SpanID()
	}
	return g.base.NewIDs(ctx)
}

func (g *anchorIDs) NewSpanID(ctx context.Context, traceID trace.TraceID) trace.SpanID {
	return g.base.NewSpanID(ctx, traceID)
}

// randomIDs is the SDK's default generator, which it does not export:
// random ids from a source seeded once from crypto/rand.
type randomIDs struct {
	mu  sync.Mutex
	rng *rand.Rand
}

func newRandomIDs() *randomIDs {
	var seed [16]byte
	_, _ = crand.Read(seed[:])
	return &randomIDs{rng: rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])))}
}

func (g *randomIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var tid trace.TraceID
	var sid trace.SpanID
	for !tid.IsValid() {
		binary.LittleEndian.PutUint64(tid[:8], g.rng.Uint64())
		binary.LittleEndian.PutUint64(tid[8:], g.rng.Uint64())
	}
	for !sid.IsValid() {
		binary.LittleEndian.PutUint64(sid[:], g.rng.Uint64())
	}
	return tid, sid
}

func (g *randomIDs) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	g.mu.Lock()
	defer g.mu.Unlock()
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.LittleEndian.PutUint64(sid[:], g.rng.Uint64())
	}
	return sid
}
