package otelsink_test

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/otelsink"
)

// delta adds a model_delta of the call under way (no record: the seq of
// the call's intent, one second later).
func (s *script) delta(step, attempt, client int, text string) *script {
	s.seq--
	return s.add(one(polyloop.EventModelDelta), func(e *polyloop.Event) {
		e.Step, e.CallID, e.Attempt = step, callID(step, attempt), attempt
		e.Delta = &polyloop.Delta{Attempt: client, Text: text}
	})
}

// superseded adds the candidate_superseded of a client attempt (client >
// 0) of the call under way, or of a call made again (client 0: the event
// shares the new call's intent, whose seq is next).
func (s *script) superseded(step, attempt, client int) *script {
	if client > 0 {
		s.seq--
	}
	return s.add(one(polyloop.EventCandidateSuperseded), func(e *polyloop.Event) {
		e.Step, e.CallID, e.Attempt = step, callID(step, attempt), attempt
		if client > 0 {
			e.Delta = &polyloop.Delta{Attempt: client, Superseded: true}
		}
	})
}

const secretPreview = "PREVIEW-TEXT-NEVER-RECORDED"

// eventAttrs are a span event's attributes.
func eventAttrs(ev sdktrace.Event) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range ev.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// spanEvents are the span's events of the given name.
func spanEvents(s sdktrace.ReadOnlySpan, name string) []sdktrace.Event {
	var out []sdktrace.Event
	for _, ev := range s.Events() {
		if ev.Name == name {
			out = append(out, ev)
		}
	}
	return out
}

// noPreviewText fails if the text of a delta is anywhere in the spans.
func noPreviewText(t *testing.T, spans []sdktrace.ReadOnlySpan) {
	t.Helper()
	for _, s := range spans {
		all := s.Attributes()
		for _, ev := range s.Events() {
			all = append(all, ev.Attributes...)
		}
		for _, kv := range all {
			if strings.Contains(kv.Value.Emit(), secretPreview) {
				t.Errorf("%s: %s holds a delta's text", s.Name(), kv.Key)
			}
		}
	}
}

// A client's retry after a streamed preview is a span event on the chat
// span, naming the library's and the client's attempt; deltas leave no
// trace.
func TestSupersededCandidateOnTheChatSpan(t *testing.T) {
	t.Parallel()
	sink, sr := recorder(otelsink.Options{IncludeContent: true})
	sc := newScript("run-1").started().modelCall(1, 1).
		delta(1, 1, 1, secretPreview).superseded(1, 1, 1).delta(1, 1, 2, secretPreview).
		reply(1, 1, polyloop.ModelReply{Model: "gpt-test", Text: "done", Attempts: 2, Usage: polyloop.Usage{InputTokens: 3, OutputTokens: 1}}).
		final(1, "done").finished(polyloop.StopCompleted, "done")
	emitAll(t, context.Background(), sink, sc.evs)
	spans := byName(sr.Ended())
	chat := spans["chat gpt-test"]
	if len(chat) != 1 {
		t.Fatalf("spans %v", names(sr.Ended()))
	}
	evs := spanEvents(chat[0], "polyloop.candidate_superseded")
	if len(evs) != 1 {
		t.Fatalf("chat span events %v; want one polyloop.candidate_superseded", chat[0].Events())
	}
	a := eventAttrs(evs[0])
	if a["polyloop.call_id"].AsString() != "m1.1" || a["polyloop.attempt"].AsInt64() != 1 || a["polyloop.client_attempt"].AsInt64() != 1 {
		t.Errorf("event attributes %v", evs[0].Attributes)
	}
	if !evs[0].Time.Equal(sc.evs[4].At) {
		t.Errorf("event at %v; want the superseded event's At %v", evs[0].Time, sc.evs[4].At)
	}
	if len(spanEvents(spans["invoke_agent researcher"][0], "polyloop.candidate_superseded")) != 0 {
		t.Error("the client's superseded attempt is also on the invoke_agent span")
	}
	noPreviewText(t, sr.Ended())
}

// A call left of unknown outcome and made again by a resume is superseded
// as a whole: a span event on the resumed invocation's span (the killed
// call's chat span belongs to the invocation that died).
func TestSupersededOrphanOnTheInvocation(t *testing.T) {
	t.Parallel()
	sink, sr := recorder(otelsink.Options{})
	sc := newScript("run-1").resumed(polyloop.ResumePlan{Action: polyloop.PlanRetryModelCall, Step: 1, Attempt: 2, LastSeq: 1}).
		superseded(1, 1, 0).modelCall(1, 2).
		reply(1, 2, polyloop.ModelReply{Model: "gpt-test", Text: "done", Attempts: 1, Usage: polyloop.Usage{InputTokens: 3, OutputTokens: 1}}).
		final(1, "done").finished(polyloop.StopCompleted, "done")
	emitAll(t, context.Background(), sink, sc.evs)
	inv := byName(sr.Ended())["invoke_agent researcher"]
	if len(inv) != 1 {
		t.Fatalf("spans %v", names(sr.Ended()))
	}
	evs := spanEvents(inv[0], "polyloop.candidate_superseded")
	if len(evs) != 1 {
		t.Fatalf("invoke_agent events %v; want one polyloop.candidate_superseded", inv[0].Events())
	}
	a := eventAttrs(evs[0])
	if a["polyloop.call_id"].AsString() != "m1.1" || a["polyloop.attempt"].AsInt64() != 1 || a["polyloop.step"].AsInt64() != 1 {
		t.Errorf("event attributes %v", evs[0].Attributes)
	}
	if _, ok := a["polyloop.client_attempt"]; ok {
		t.Errorf("a whole call superseded names a client attempt: %v", evs[0].Attributes)
	}
	chat := byName(sr.Ended())["chat gpt-test"]
	if len(chat) != 1 || len(spanEvents(chat[0], "polyloop.candidate_superseded")) != 0 {
		t.Errorf("the new call's chat span carries the old call's superseded event")
	}
}
