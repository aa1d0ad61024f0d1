package otelsink

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/polyloop/polyloop"
)

// startChat opens a chat span at model_call_started.
func (s *Sink) startChat(ctx context.Context, ev polyloop.Event) {
	inv := s.run(ctx, ev.RunID)
	inv.endChildren(failOpenChild, ev.At)
	inv.chat = openSpan{span: s.newChat(inv, ev), id: ev.CallID}
}

func (s *Sink) newChat(inv *invocation, ev polyloop.Event) trace.Span {
	_, span := s.tracer.Start(inv.ctx, spanName("chat", inv.facts.model.model),
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(ev.At),
		trace.WithAttributes(chatAttrs(ev, inv.facts)...))
	return span
}

// endChat closes the chat span at model_call_finished. Without a matching
// model_call_started (the sink was added mid-call), the span starts and ends
// at this event.
func (s *Sink) endChat(ctx context.Context, ev polyloop.Event) {
	inv := s.run(ctx, ev.RunID)
	span := inv.chat.span
	if span == nil || inv.chat.id != ev.CallID {
		inv.endChildren(failOpenChild, ev.At)
		span = s.newChat(inv, ev)
	}
	inv.chat = openSpan{}
	span.SetAttributes(attrEndSeq.Int64(ev.Seq))
	switch {
	case ev.Failure != nil:
		span.SetAttributes(semconv.ErrorTypeKey.String(modelErrorType(ev.Failure)))
		span.AddEvent("exception", trace.WithTimestamp(ev.At), trace.WithAttributes(
			attribute.String("exception.type", ev.Failure.Type),
			attribute.String("exception.message", ev.Failure.Message)))
		span.SetStatus(codes.Error, ev.Failure.Message)
	case ev.Reply != nil:
		span.SetAttributes(replyAttrs(ev.Reply)...)
		inv.usage.add(ev.Reply.Usage)
	}
	span.End(trace.WithTimestamp(ev.At))
}

// startTool opens an execute_tool span at action_started.
func (s *Sink) startTool(ctx context.Context, ev polyloop.Event) {
	inv := s.run(ctx, ev.RunID)
	inv.endChildren(failOpenChild, ev.At)
	inv.tool = openSpan{span: s.newTool(inv, ev), id: ev.ActionID}
}

func (s *Sink) newTool(inv *invocation, ev polyloop.Event) trace.Span {
	_, span := s.tracer.Start(inv.ctx, spanName("execute_tool", toolName(ev.Action)),
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(ev.At),
		trace.WithAttributes(toolAttrs(ev, s.opts.IncludeContent, inv.facts.tools)...))
	return span
}

// endTool closes the execute_tool span at action_finished. Without a
// matching action_started, the span starts and ends at this event.
func (s *Sink) endTool(ctx context.Context, ev polyloop.Event) {
	inv := s.run(ctx, ev.RunID)
	span := inv.tool.span
	if span == nil || inv.tool.id != ev.ActionID {
		inv.endChildren(failOpenChild, ev.At)
		span = s.newTool(inv, ev)
	}
	inv.tool = openSpan{}
	span.SetAttributes(attrEndSeq.Int64(ev.Seq))
	span.SetAttributes(outcomeAttrs(ev, s.opts.IncludeContent)...)
	if ev.Outcome != nil && ev.Outcome.Status != polyloop.Executed {
		st := string(ev.Outcome.Status)
		failure{st, "action " + st}.apply(span)
	}
	span.End(trace.WithTimestamp(ev.At))
}
