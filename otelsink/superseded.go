package otelsink

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/polyloop/polyloop"
)

// attrClientAttempt is the client's own attempt of a superseded candidate.
const attrClientAttempt = attribute.Key("polyloop.client_attempt")

// superseded records candidate_superseded as a span event: on the chat
// span of its call while that span is open (a client attempt whose preview
// is dropped: the client retried, the stream failed or was cancelled),
// else on the invoke_agent span (a call left of unknown outcome and made
// again by a resume: its chat span ended with the invocation that died).
// Deltas themselves are not recorded: they may be long, and the reply's
// attributes say what became of them.
func (s *Sink) superseded(ctx context.Context, ev polyloop.Event) {
	inv := s.run(ctx, ev.RunID)
	span := inv.span
	if inv.chat.span != nil && inv.chat.id == ev.CallID {
		span = inv.chat.span
	}
	if span == nil {
		return
	}
	span.AddEvent("polyloop."+string(ev.Kind), trace.WithTimestamp(ev.At), trace.WithAttributes(supersededAttrs(ev)...))
}

func supersededAttrs(ev polyloop.Event) []attribute.KeyValue {
	a := []attribute.KeyValue{attrSeq.Int64(ev.Seq), attrStep.Int(ev.Step), attrCallID.String(ev.CallID), attrAttempt.Int(ev.Attempt)}
	if ev.Delta != nil {
		a = append(a, attrClientAttempt.Int(ev.Delta.Attempt))
	}
	return a
}
