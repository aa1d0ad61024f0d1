package anthropicmodel

import (
	"cmp"
	"context"
	"errors"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/provider"
)

var _ polyloop.StreamingModelClient = (*Client)(nil)

// Stream sends the request as Complete does, with "stream": true, and
// delivers the reply's deltas as they arrive: text blocks' text as Text;
// each tool_use block's input as Args, with the block's place among the
// tool calls as ToolCall and its id and name on its first delta ("{}" as
// the Args of a tool use that streamed no input). It retries as Complete
// does (see the package doc); a retried attempt that delivered deltas is
// superseded before the next. The reply is the one Complete returns for
// the same message. A stream cut short, or ending without message_stop, is
// a *ConnectionError; an error event in the stream (overloaded_error,
// rate_limit_error, ...) an *APIError with InStream set and the status the
// API documents for its type; an event that is not JSON a *ResponseError.
// A failed call that consumed tokens returns a *UsageError: message_start
// reports the input tokens, message_delta the output tokens so far. It
// implements polyloop.StreamingModelClient.
func (c *Client) Stream(ctx context.Context, req polyloop.ModelRequest, deltas func(polyloop.Delta)) (polyloop.ModelReply, error) {
	params, err := c.params(req)
	if err != nil {
		return polyloop.ModelReply{}, err
	}
	return c.p.Stream(ctx, req.Params, deltas, func(ctx context.Context, x *provider.Exchange) (polyloop.ModelReply, error) {
		return c.streamAttempt(ctx, x, params)
	})
}

// streamAttempt makes one streamed request.
func (c *Client) streamAttempt(ctx context.Context, x *provider.Exchange, params anthropic.MessageNewParams) (polyloop.ModelReply, error) {
	stream := c.sdk.Messages.NewStreaming(ctx, params, c.requestOptions(x)...)
	defer stream.Close()
	var msg anthropic.Message
	blocks := toolBlocks{}
	stopped := false
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			return polyloop.ModelReply{}, &ResponseError{StatusCode: x.Status(), RequestID: x.RequestID(), Err: err}
		}
		switch ev.Type {
		case "message_start", "message_delta":
			x.Report(c.usage(msg.Usage, cmp.Or(string(msg.Model), string(params.Model))))
		case "message_stop":
			stopped = true
		}
		blocks.emit(x, ev)
	}
	if err := stream.Err(); err != nil {
		return polyloop.ModelReply{}, c.streamError(x, err)
	}
	if !stopped {
		return polyloop.ModelReply{}, c.p.Incomplete(x)
	}
	return c.reply(&msg, x, string(params.Model))
}

// toolBlocks follows the tool_use blocks of a stream: the place among the
// reply's tool calls of each block, by the block's index, and whether it
// streamed input.
type toolBlocks map[int64]*toolBlock

type toolBlock struct {
	call     int
	streamed bool
}

// emit delivers the deltas of one event.
func (b toolBlocks) emit(x *provider.Exchange, ev anthropic.MessageStreamEventUnion) {
	switch ev.Type {
	case "content_block_start":
		if cb := ev.ContentBlock; cb.Type == "tool_use" {
			tb := &toolBlock{call: len(b)}
			b[ev.Index] = tb
			x.Emit(polyloop.Delta{ToolCall: tb.call, ToolCallID: cb.ID, ToolName: cb.Name})
		}
	case "content_block_delta":
		switch d := ev.Delta; d.Type {
		case "text_delta":
			if d.Text != "" {
				x.Emit(polyloop.Delta{Text: d.Text})
			}
		case "input_json_delta":
			if tb := b[ev.Index]; tb != nil && d.PartialJSON != "" {
				tb.streamed = true
				x.Emit(polyloop.Delta{ToolCall: tb.call, Args: d.PartialJSON})
			}
		}
	case "content_block_stop":
		if tb := b[ev.Index]; tb != nil && !tb.streamed {
			x.Emit(polyloop.Delta{ToolCall: tb.call, Args: "{}"}) // the input the block started with
		}
	}
}

// streamError classifies the failure of a stream: an error status, an
// error event, or what the attempt saw on the wire.
func (c *Client) streamError(x *provider.Exchange, err error) error {
	var apiErr *anthropic.Error
	if x.Status() < 400 && errors.As(err, &apiErr) {
		return c.p.EventError(x, []byte(apiErr.RawJSON()))
	}
	return c.p.Classify(x, err)
}
