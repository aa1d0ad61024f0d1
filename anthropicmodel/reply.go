package anthropicmodel

import (
	"cmp"
	"encoding/json"
	"errors"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/pricing"
	"github.com/polyloop/polyloop/internal/provider"
)

// errNoContent is the cause of a *ResponseError for a body that is not a
// message.
var errNoContent = errors.New("the response is not a message: it has no content")

// reply converts a message into the library's reply. requested is the model
// the request named. A body that is not a message is a *ResponseError
// carrying the usage it reports, if any.
func (c *Client) reply(msg *anthropic.Message, x *provider.Exchange, requested string) (polyloop.ModelReply, error) {
	model := cmp.Or(string(msg.Model), requested)
	if !msg.JSON.Content.Valid() {
		e := &ResponseError{StatusCode: x.Status(), RequestID: x.RequestID(), Err: errNoContent}
		if msg.JSON.Usage.Valid() {
			u := c.usage(msg.Usage, model)
			e.Usage = &u
		}
		return polyloop.ModelReply{}, e
	}
	var text strings.Builder
	var calls []polyloop.ToolCall
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			calls = append(calls, polyloop.ToolCall{ID: b.ID, Name: b.Name, Args: compact(b.Input)})
		}
	}
	r := polyloop.ModelReply{
		Text:         text.String(),
		ToolCalls:    calls,
		Model:        model,
		FinishReason: string(msg.StopReason),
		RequestID:    x.RequestID(),
	}
	if msg.JSON.Usage.Valid() {
		r.Usage = c.usage(msg.Usage, r.Model)
	}
	return r, nil
}

// compact keeps tool input in the form encoding/json gives a RawMessage
// (compact, with <, > and & escaped), so that the reply reads the same, byte
// for byte, before and after a round trip through the log.
func compact(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil // the SDK decoded it, so it is JSON
	}
	return b
}

// usage maps the message's usage. The API's input_tokens excludes cache
// reads and writes; InputTokens counts all three, like the other clients, and
// CachedTokens the cache reads.
func (c *Client) usage(u anthropic.Usage, model string) polyloop.Usage {
	out := polyloop.Usage{
		InputTokens:     u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens,
		OutputTokens:    u.OutputTokens,
		CachedTokens:    u.CacheReadInputTokens,
		ReasoningTokens: u.OutputTokensDetails.ThinkingTokens,
	}
	n := pricing.Tokens{Input: u.InputTokens, CachedInput: u.CacheReadInputTokens,
		CacheWrite: u.CacheCreationInputTokens, Output: u.OutputTokens}
	if usd, ok := c.p.Prices.Cost(model, n); ok {
		out.CostUSD = &usd
	}
	return out
}
