package polyloop

import "context"

// StreamingModelClient is the optional streaming seam of a ModelClient: a
// client that implements it delivers the reply's deltas while it works.
//
// Contract — everything of ModelClient.Complete holds for Stream, and:
//   - Stream delivers deltas by calling deltas, from one goroutine at a
//     time, and never after it returned. The reply it returns, or its
//     error, is what the log records; deltas are never records.
//   - Each delta names the client's attempt (Delta.Attempt: 1, then 2 … for
//     the client's own retries). When an attempt that delivered deltas ends
//     without becoming the reply — the client retries after a broken stream
//     or a 429 — the client MUST deliver Delta{Attempt: n, Superseded: true}
//     before the first delta of the next attempt. It need not do so for the
//     last attempt when Stream returns an error: the library announces that
//     one itself.
//   - The deltas of the attempt that became the reply concatenate to the
//     reply: their Text to Reply.Text, and per tool call (Delta.ToolCall),
//     their Args to that call's arguments as the client received them.
//   - Usage that a stream reported before it failed belongs on the error
//     (UsageCarrier): a billed call is never free.
//   - Cancellation: when ctx is done, Stream stops reading, releases the
//     stream promptly and returns an error for which errors.Is(err,
//     ctx.Err()) holds.
//
// The library streams only when one of the runner's sinks wants deltas
// (DeltaSink); otherwise it calls Complete.
type StreamingModelClient interface {
	ModelClient
	Stream(ctx context.Context, req ModelRequest, deltas func(Delta)) (ModelReply, error)
}

// DeltaSink is an optional interface of an EventSink: WantsDeltas says
// whether the sink shows or keeps model_delta events (a terminal showing the
// text as it comes, a debug log). The runner streams a model call only when
// an active sink wants deltas, so that a run whose sinks would drop them
// makes the plain call — the same records either way. WantsDeltas MUST be
// cheap and MUST NOT change during a run.
type DeltaSink interface {
	EventSink
	WantsDeltas() bool
}

// Delta is a fragment of a reply while it is being produced: a preview, not
// a fact. A consumer that shows deltas is correct with one rule: show the
// deltas of the current attempt; on a superseded one, drop what it showed of
// that attempt.
type Delta struct {
	// Attempt is the client's attempt the delta belongs to (1, 2 … after
	// the client's retries).
	Attempt int `json:"attempt"`
	// Text is a fragment of the reply's text.
	Text string `json:"text,omitempty"`
	// ToolCall is the index of the tool call an Args fragment belongs to;
	// ToolCallID and ToolName are set on its first fragment.
	ToolCall   int    `json:"tool_call,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	Args       string `json:"args,omitempty"`
	// Superseded: the attempt ended without becoming the reply; everything
	// shown of it must be dropped. A superseded delta carries nothing else.
	Superseded bool `json:"superseded,omitempty"`
}
