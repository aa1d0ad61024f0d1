package providertest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/provider"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/toolcallparser"
)

// countingStore counts the Appends — the durable writes — of a store.
type countingStore struct {
	*memstore.Store
	appends atomic.Int64
}

func (s *countingStore) Append(ctx context.Context, runID string, recs []polyloop.Row) error {
	s.appends.Add(1)
	return s.Store.Append(ctx, runID, recs)
}

// discard is a sink that wants deltas and keeps nothing: with it the
// runner streams.
type discard struct{ deltas atomic.Int64 }

func (d *discard) WantsDeltas() bool { return true }

func (d *discard) Emit(_ context.Context, ev polyloop.Event) error {
	if ev.Kind == polyloop.EventModelDelta {
		d.deltas.Add(1)
	}
	return nil
}

// CheckStreamingWritesNothingMore runs the end-to-end run twice, streamed
// (the runner has a sink that wants deltas) and not, and checks that both write the same
// records (but for their times) in the same number of Appends: streaming
// adds no durable write.
func CheckStreamingWritesNothingMore[P provider.Package](t *testing.T, h Harness[P]) {
	// One server for both runs, so that their snapshots are the same.
	srv := h.Serve(t, append(append([]Response{}, h.EndToEnd.Script...), h.EndToEnd.Script...)...)
	run := func(sinks []polyloop.EventSink) ([]polyloop.Record, int64) {
		agent := h.WeatherAgent(h.EndToEnd.Tool)
		store := &countingStore{Store: memstore.New()}
		r := &polyloop.Runner{Model: h.must(t, Options{BaseURL: srv.URL(), APIKey: "test-key"}),
			Parser: toolcallparser.New(toolcallparser.Options{Tools: agent.Tools}), Executor: WeatherExec{Tool: h.EndToEnd.Tool},
			Store: store, Sinks: sinks}
		if _, err := r.Run(context.Background(), "run-1", agent, polyloop.Task{Input: h.EndToEnd.Input}); err != nil {
			t.Fatal(err)
		}
		log, err := polyloop.ReadLog(context.Background(), store, "run-1")
		if err != nil {
			t.Fatal(err)
		}
		return log.Records, store.appends.Load()
	}
	sink := &discard{}
	streamedRecs, streamedAppends := run([]polyloop.EventSink{sink})
	plainRecs, plainAppends := run(nil)
	if sink.deltas.Load() == 0 {
		t.Fatal("the run with a sink streamed no delta")
	}
	if streamedAppends != plainAppends {
		t.Errorf("streamed: %d appends, not streamed: %d", streamedAppends, plainAppends)
	}
	a, b := encodeTimeless(t, streamedRecs), encodeTimeless(t, plainRecs)
	if a != b {
		t.Errorf("the streamed run wrote other records:\nstreamed %s\n   plain %s", a, b)
	}
}

// encodeTimeless encodes records with their times zeroed.
func encodeTimeless(t *testing.T, recs []polyloop.Record) string {
	t.Helper()
	out := make([]polyloop.Record, len(recs))
	for i, r := range recs {
		r.At = time.Time{}
		out[i] = r
	}
	b, err := polyloop.EncodeRecords(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
