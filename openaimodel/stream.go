package openaimodel

import (
	"cmp"
	"context"
	"errors"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/provider"
)

var _ polyloop.StreamingModelClient = (*Client)(nil)

// errBadChunk is the cause of a *ResponseError for a chunk the SDK's
// accumulator refuses (one of another completion, an impossible index).
var errBadChunk = errors.New("a chunk of the stream does not continue the completion")

// Stream sends the request as Complete does, with "stream": true and
// stream_options.include_usage (so that the last chunk reports the usage),
// and delivers the reply's deltas as they arrive: the content, or the
// refusal, as Text; each tool call's arguments as Args, with its index as
// ToolCall and its id and name on the fragment that carries them. It
// retries as Complete does (see the package doc); a retried attempt that
// delivered deltas is superseded before the next. The reply is the one
// Complete returns for the same completion. A stream cut short, or ending
// without a finish reason, is a *ConnectionError; an error event in the
// stream an *APIError with InStream set; a chunk that is not JSON a
// *ResponseError. A failed call that delivered deltas returns a
// *UsageError: OpenAI reports usage only at the end of a stream, so its
// cost is unknown unless the stream got that far. It implements
// polyloop.StreamingModelClient.
func (c *Client) Stream(ctx context.Context, req polyloop.ModelRequest, deltas func(polyloop.Delta)) (polyloop.ModelReply, error) {
	params, err := c.params(req)
	if err != nil {
		return polyloop.ModelReply{}, err
	}
	params.StreamOptions.IncludeUsage = openai.Bool(true)
	return c.p.Stream(ctx, req.Params, deltas, func(ctx context.Context, x *provider.Exchange) (polyloop.ModelReply, error) {
		return c.streamAttempt(ctx, x, params, req.CallID)
	})
}

// streamAttempt makes one streamed request.
func (c *Client) streamAttempt(ctx context.Context, x *provider.Exchange, params openai.ChatCompletionNewParams, callID string) (polyloop.ModelReply, error) {
	stream := c.sdk.Chat.Completions.NewStreaming(ctx, params, option.WithMiddleware(x.Middleware))
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	var usage *openai.CompletionUsage
	finished := false
	for stream.Next() {
		chunk := stream.Current()
		if !acc.AddChunk(chunk) {
			return polyloop.ModelReply{}, &ResponseError{StatusCode: x.Status(), RequestID: x.RequestID(), Err: errBadChunk}
		}
		if chunk.JSON.Usage.Valid() {
			u := chunk.Usage
			usage = &u
			x.Report(c.usage(u, cmp.Or(chunk.Model, string(params.Model))))
		}
		for _, ch := range chunk.Choices {
			if ch.Index == 0 {
				emitChoice(x, ch.Delta)
				finished = finished || ch.FinishReason != ""
			}
		}
	}
	if err := stream.Err(); err != nil {
		return polyloop.ModelReply{}, c.streamError(x, err)
	}
	if !finished {
		return polyloop.ModelReply{}, c.p.Incomplete(x)
	}
	return c.convert(&acc.ChatCompletion, x, string(params.Model), callID, usage)
}

// emitChoice delivers the deltas of a chunk's first choice.
func emitChoice(x *provider.Exchange, d openai.ChatCompletionChunkChoiceDelta) {
	if d.Content != "" {
		x.Emit(polyloop.Delta{Text: d.Content})
	}
	if d.Refusal != "" {
		x.Emit(polyloop.Delta{Text: d.Refusal})
	}
	for _, tc := range d.ToolCalls {
		if tc.ID == "" && tc.Function.Name == "" && tc.Function.Arguments == "" {
			continue
		}
		x.Emit(polyloop.Delta{ToolCall: max(int(tc.Index), 0), ToolCallID: tc.ID, ToolName: tc.Function.Name, Args: tc.Function.Arguments})
	}
}

// streamError classifies the failure of a stream: an error event, or what
// the attempt saw on the wire.
func (c *Client) streamError(x *provider.Exchange, err error) error {
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		return c.p.EventError(x, se.Event.Data)
	}
	return c.p.Classify(x, err)
}
