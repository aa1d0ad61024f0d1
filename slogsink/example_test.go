package slogsink_test

import (
	"context"
	"log/slog"
	"os"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/slogsink"
)

// Events as JSON lines. (The time attribute is dropped here to keep the
// output stable; a real log keeps it.)
func Example() {
	h := slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})
	sink := slogsink.New(slog.New(h), slogsink.Options{})
	_ = sink.Emit(context.Background(), polyloop.Event{
		V: polyloop.EventVersion, Kind: polyloop.EventRunFinished, RunID: "run-1", Agent: "demo", Seq: 8,
		StopReason: polyloop.StopEnvError, Totals: &polyloop.Totals{Steps: 2, ModelCalls: 2, Actions: 2},
	})
	// Output:
	// {"level":"ERROR","msg":"run_finished","v":1,"kind":"run_finished","run_id":"run-1","agent":"demo","seq":8,"stop_reason":"env_error","totals":{"steps":2,"model_calls":2,"actions":2,"input_tokens":0,"output_tokens":0,"cost_usd":0}}
}
