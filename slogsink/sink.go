// Package slogsink writes PolyLoop's events as structured log/slog records.
// With slog.NewJSONHandler that is one JSON object per line, per event.
//
// Every record has the message and attribute "kind" (the event kind), the
// event version "v", "run_id", "agent", "seq" (the seq of the record the
// event reflects) and, where they apply, "step", "call_id", "attempt" and
// "action_id"; the rest is grouped by what it describes: "plan", "reply",
// "delta", "failure", "action", "outcome", "step_record", "totals",
// "override", "reception". The record's time is the event's At: when the reflected record
// was built.
//
// Levels (LevelOf): a failed model call, an env_error action and a run
// finishing with llm_error or env_error are errors; a not_executed action, a
// run finishing with resume_state_unknown, a configuration override and a
// failed child reception are warnings; a streamed delta (model_delta) is
// debug, so a handler at its default level logs none; everything else is
// info, candidate_superseded included.
//
// Streamed previews carry the group "delta": the client's "attempt", and
// "text", or "tool_call" with "tool_call_id", "tool_name" and "args" — or
// "superseded" on a candidate_superseded of one client attempt (a resume's
// superseded orphan has no delta group: "call_id" and "attempt" name the
// call made again).
//
// Events hold no secrets, but they hold content: the task and system prompt
// (in the snapshot), model replies, tool arguments, observations. Snapshots
// are logged only with Options.IncludeSnapshot; texts are cut to
// Options.MaxText characters, or left out.
package slogsink

import (
	"context"
	"log/slog"
	"time"

	"github.com/polyloop/polyloop"
)

// DefaultMaxText is the default bound, in characters, of a logged text.
const DefaultMaxText = 2048

// Options configure a Sink. The zero value is usable.
type Options struct {
	// IncludeSnapshot logs the run's snapshot (attribute "snapshot") on
	// run_started, run_resumed and config_overridden. Off by default: it
	// holds the task and the system prompt in full.
	IncludeSnapshot bool
	// MaxText bounds each text — reply text, tool arguments, code,
	// observations, feedback, answers — in characters (runes); a longer text
	// is cut and ends with "…". 0: DefaultMaxText. Negative: texts are left
	// out.
	MaxText int
}

// Sink is a polyloop.EventSink writing slog records. It is safe for
// concurrent use if its handler is (the handlers of log/slog are).
type Sink struct {
	h    slog.Handler
	opts Options
}

var _ polyloop.EventSink = (*Sink)(nil)

// New returns a Sink writing to logger's handler (with the attributes and
// groups of logger.With); nil means slog.Default().
func New(logger *slog.Logger, opts Options) *Sink {
	if logger == nil {
		logger = slog.Default()
	}
	if opts.MaxText == 0 {
		opts.MaxText = DefaultMaxText
	}
	return &Sink{h: logger.Handler(), opts: opts}
}

// WantsDeltas implements polyloop.DeltaSink: the sink keeps deltas when its
// handler logs at DEBUG, the level of model_delta.
func (s *Sink) WantsDeltas() bool { return s.h.Enabled(context.Background(), slog.LevelDebug) }

// Emit implements polyloop.EventSink. It calls the handler directly, so the
// handler's error (a failed write, say) is returned, not swallowed. It returns
// ctx's error when ctx is already done, and nil without writing when the
// handler is not enabled for the event's level.
func (s *Sink) Emit(ctx context.Context, ev polyloop.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	level := LevelOf(ev)
	if !s.h.Enabled(ctx, level) {
		return nil
	}
	at := ev.At
	if at.IsZero() {
		at = time.Now()
	}
	r := slog.NewRecord(at, level, string(ev.Kind), 0)
	r.AddAttrs(s.attrs(ev)...)
	return s.h.Handle(ctx, r)
}

// LevelOf is the level of an event's record.
func LevelOf(ev polyloop.Event) slog.Level {
	switch ev.Kind {
	case polyloop.EventModelDelta:
		return slog.LevelDebug // a call streams many
	case polyloop.EventModelCallFinished:
		if ev.Failure != nil {
			return slog.LevelError
		}
	case polyloop.EventActionFinished:
		if ev.Outcome != nil {
			return statusLevel(ev.Outcome.Status)
		}
	case polyloop.EventRunFinished:
		return stopLevel(ev.StopReason)
	case polyloop.EventConfigOverridden:
		return slog.LevelWarn
	case polyloop.EventChildReceived:
		if ev.Reception != nil && ev.Reception.Reception == polyloop.ReceptionFailed {
			return slog.LevelWarn
		}
	}
	return slog.LevelInfo
}

func statusLevel(s polyloop.ActionStatus) slog.Level {
	switch s {
	case polyloop.EnvError:
		return slog.LevelError
	case polyloop.NotExecuted:
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

func stopLevel(r polyloop.StopReason) slog.Level {
	switch r {
	case polyloop.StopLLMError, polyloop.StopEnvError:
		return slog.LevelError
	case polyloop.StopResumeStateUnknown:
		return slog.LevelWarn
	}
	return slog.LevelInfo
}
