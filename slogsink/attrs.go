package slogsink

import (
	"log/slog"
	"unicode/utf8"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/diag"
)

// attrs builds an event's attributes: the common ones, then the groups of
// what the event carries.
func (s *Sink) attrs(ev polyloop.Event) []slog.Attr {
	a := []slog.Attr{
		slog.Int("v", ev.V),
		slog.String("kind", string(ev.Kind)),
		slog.String("run_id", ev.RunID),
	}
	a = appendNonZero(a, "agent", ev.Agent)
	if ev.Step > 0 {
		a = append(a, slog.Int("step", ev.Step))
	}
	a = append(a, slog.Int64("seq", ev.Seq))
	a = appendNonZero(a, "call_id", ev.CallID)
	if ev.Attempt > 0 {
		a = append(a, slog.Int("attempt", ev.Attempt))
	}
	a = appendNonZero(a, "action_id", ev.ActionID)
	a = appendNonZero(a, "snapshot_hash", ev.SnapshotHash)
	if ev.Snapshot != nil && s.opts.IncludeSnapshot {
		a = append(a, slog.Any("snapshot", ev.Snapshot))
	}
	return append(a, s.groups(ev)...)
}

func (s *Sink) groups(ev polyloop.Event) []slog.Attr {
	var a []slog.Attr
	if ev.Plan != nil {
		a = append(a, planGroup(ev.Plan))
	}
	if ev.Delta != nil {
		a = append(a, s.deltaGroup(ev.Delta))
	}
	if ev.Reply != nil {
		a = append(a, s.replyGroup(ev.Reply))
	}
	if ev.Failure != nil {
		a = append(a, failureGroup("failure", ev.Failure))
	}
	if ev.Action != nil {
		a = append(a, s.actionGroup(ev.Action, ev.Replay))
	}
	if ev.Outcome != nil {
		a = append(a, s.outcomeGroup(ev.Outcome))
	}
	if ev.StepRecord != nil {
		a = append(a, s.stepGroup(ev.StepRecord))
	}
	if ev.ActionResult != nil {
		a = append(a, s.resultGroup(ev.ActionResult))
	}
	if ev.Kind == polyloop.EventRunFinished {
		a = append(a, slog.String("stop_reason", string(ev.StopReason)))
		a = s.appendText(a, "final_answer", ev.FinalAnswer)
	}
	if ev.Totals != nil {
		a = append(a, totalsGroup(ev.Totals))
	}
	if ev.Override != nil {
		a = append(a, s.overrideGroup(ev.Override))
	}
	if ev.Reception != nil {
		a = append(a, s.receptionGroup(ev.Reception))
	}
	return a
}

func planGroup(p *polyloop.ResumePlan) slog.Attr {
	a := []slog.Attr{slog.String("action", string(p.Action))}
	if p.Step > 0 {
		a = append(a, slog.Int("step", p.Step))
	}
	if p.Attempt > 0 {
		a = append(a, slog.Int("attempt", p.Attempt))
	}
	a = appendNonZero(a, "stop_reason", string(p.StopReason))
	a = appendNonZero(a, "model_call_id", p.ModelCallID)
	a = appendNonZero(a, "action_id", p.ActionID)
	a = appendNonZero(a, "tool", p.Tool)
	a = append(a, slog.String("reason", p.Reason), slog.Int64("last_seq", p.LastSeq))
	return slog.Attr{Key: "plan", Value: slog.GroupValue(a...)}
}

func (s *Sink) replyGroup(r *polyloop.ModelReply) slog.Attr {
	var a []slog.Attr
	a = appendNonZero(a, "model", r.Model)
	a = appendNonZero(a, "finish_reason", r.FinishReason)
	a = append(a, slog.Int64("input_tokens", r.Usage.InputTokens), slog.Int64("output_tokens", r.Usage.OutputTokens))
	if r.Usage.CachedTokens > 0 {
		a = append(a, slog.Int64("cached_tokens", r.Usage.CachedTokens))
	}
	if r.Usage.ReasoningTokens > 0 {
		a = append(a, slog.Int64("reasoning_tokens", r.Usage.ReasoningTokens))
	}
	if r.Usage.CostUSD != nil {
		a = append(a, slog.Float64("cost_usd", *r.Usage.CostUSD))
	}
	if len(r.ToolCalls) > 0 {
		a = append(a, slog.Int("tool_calls", len(r.ToolCalls)))
	}
	if r.Attempts > 0 {
		a = append(a, slog.Int("attempts", r.Attempts))
	}
	a = appendNonZero(a, "request_id", r.RequestID)
	a = s.appendText(a, "text", r.Text)
	return slog.Attr{Key: "reply", Value: slog.GroupValue(a...)}
}

// deltaGroup is a preview: the client's attempt and the fragment, or the
// attempt superseded.
func (s *Sink) deltaGroup(d *polyloop.Delta) slog.Attr {
	a := []slog.Attr{slog.Int("attempt", d.Attempt)}
	if d.Superseded {
		a = append(a, slog.Bool("superseded", true))
	}
	a = s.appendText(a, "text", d.Text)
	if d.ToolCallID != "" || d.ToolName != "" || d.Args != "" {
		a = append(a, slog.Int("tool_call", d.ToolCall))
		a = appendNonZero(a, "tool_call_id", d.ToolCallID)
		a = appendNonZero(a, "tool_name", d.ToolName)
		a = s.appendText(a, "args", d.Args)
	}
	return slog.Attr{Key: "delta", Value: slog.GroupValue(a...)}
}

// failureGroup logs a diagnostic; its message is already bounded by diag.
func failureGroup(key string, d *diag.Diagnostic) slog.Attr {
	a := []slog.Attr{slog.String("type", d.Type), slog.String("message", d.Message)}
	if len(d.Fields) > 0 {
		a = append(a, slog.Any("fields", d.Fields))
	}
	if len(d.Causes) > 0 {
		a = append(a, slog.Any("causes", d.Causes))
	}
	if d.Truncated {
		a = append(a, slog.Bool("truncated", true))
	}
	return slog.Attr{Key: key, Value: slog.GroupValue(a...)}
}

func (s *Sink) actionGroup(act *polyloop.Action, replay polyloop.ReplayPolicy) slog.Attr {
	var a []slog.Attr
	a = appendNonZero(a, "tool", act.Tool)
	a = appendNonZero(a, "call_id", act.CallID)
	a = appendNonZero(a, "lang", act.Lang)
	a = appendNonZero(a, "replay", string(replay))
	a = s.appendText(a, "args", string(act.Args))
	a = s.appendText(a, "code", act.Code)
	return slog.Attr{Key: "action", Value: slog.GroupValue(a...)}
}

// outcomeGroup is the executor's own outcome: its observation text is the
// audit channel, logged even when the history got the synthetic text.
func (s *Sink) outcomeGroup(o *polyloop.ActionOutcome) slog.Attr {
	a := []slog.Attr{slog.String("status", string(o.Status))}
	if o.Done {
		a = append(a, slog.Bool("done", true))
	}
	if o.TruncatedChars > 0 {
		a = append(a, slog.Int("truncated_chars", o.TruncatedChars))
	}
	a = s.appendText(a, "observation", o.Observation)
	return slog.Attr{Key: "outcome", Value: slog.GroupValue(a...)}
}

// stepGroup is the step record: the observation as entered in the history.
func (s *Sink) stepGroup(r *polyloop.StepCompleted) slog.Attr {
	a := []slog.Attr{slog.String("decision", string(r.Decision))}
	a = appendNonZero(a, "model_call_id", r.ModelCallID)
	a = appendNonZero(a, "result_id", r.ResultID)
	if r.Outcome != nil {
		a = append(a, slog.String("status", string(r.Outcome.Status)))
	}
	if r.Synthetic {
		a = append(a, slog.Bool("synthetic", true))
	}
	if r.TruncatedChars > 0 {
		a = append(a, slog.Int("truncated_chars", r.TruncatedChars))
	}
	a = s.appendText(a, "observation", r.Observation)
	a = s.appendText(a, "feedback", r.Feedback)
	a = s.appendText(a, "answer", r.Answer)
	return slog.Attr{Key: "step_record", Value: slog.GroupValue(a...)}
}

// resultGroup is an action_result: an action of a batch settled before
// the last, its observation as entered in the history.
func (s *Sink) resultGroup(r *polyloop.ActionResult) slog.Attr {
	a := []slog.Attr{slog.String("result_id", r.ResultID)}
	if r.Outcome != nil {
		a = append(a, slog.String("status", string(r.Outcome.Status)))
	}
	if r.Synthetic {
		a = append(a, slog.Bool("synthetic", true))
	}
	if r.TruncatedChars > 0 {
		a = append(a, slog.Int("truncated_chars", r.TruncatedChars))
	}
	a = s.appendText(a, "observation", r.Observation)
	return slog.Attr{Key: "action_result", Value: slog.GroupValue(a...)}
}

func totalsGroup(t *polyloop.Totals) slog.Attr {
	a := []slog.Attr{
		slog.Int("steps", t.Steps),
		slog.Int("model_calls", t.ModelCalls),
		slog.Int("actions", t.Actions),
		slog.Int64("input_tokens", t.InputTokens),
		slog.Int64("output_tokens", t.OutputTokens),
		slog.Float64("cost_usd", t.CostUSD),
	}
	if t.CostUnknown {
		a = append(a, slog.Bool("cost_unknown", true))
	}
	if t.UnknownModelCalls > 0 {
		a = append(a, slog.Int("unknown_model_calls", t.UnknownModelCalls))
	}
	if t.UnknownActions > 0 {
		a = append(a, slog.Int("unknown_actions", t.UnknownActions))
	}
	return slog.Attr{Key: "totals", Value: slog.GroupValue(a...)}
}

func (s *Sink) overrideGroup(o *polyloop.ConfigOverride) slog.Attr {
	a := []slog.Attr{
		slog.String("previous_hash", o.PreviousHash),
		slog.String("snapshot_hash", o.SnapshotHash),
		slog.Any("fields", o.Fields),
	}
	if s.opts.IncludeSnapshot {
		a = append(a, slog.Any("snapshot", o.Snapshot))
	}
	return slog.Attr{Key: "override", Value: slog.GroupValue(a...)}
}

func (s *Sink) receptionGroup(c *polyloop.ChildReception) slog.Attr {
	a := []slog.Attr{
		slog.String("child_run_id", c.ChildRunID),
		slog.String("stop_reason", string(c.StopReason)),
		slog.String("reception", string(c.Reception)),
		slog.Int("index", c.Index),
	}
	a = appendNonZero(a, "handler", c.Handler)
	a = s.appendText(a, "value", string(c.Value))
	if c.Failure != nil {
		a = append(a, failureGroup("failure", c.Failure))
	}
	return slog.Attr{Key: "reception", Value: slog.GroupValue(a...)}
}

func appendNonZero(a []slog.Attr, key, val string) []slog.Attr {
	if val == "" {
		return a
	}
	return append(a, slog.String(key, val))
}

// appendText adds a content text, cut to MaxText runes; nothing when texts
// are left out or the text is empty.
func (s *Sink) appendText(a []slog.Attr, key, val string) []slog.Attr {
	if val == "" || s.opts.MaxText < 0 {
		return a
	}
	return append(a, slog.String(key, cut(val, s.opts.MaxText)))
}

func cut(s string, n int) string {
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for range n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i] + "…"
}
