package openaimodel

import (
	"cmp"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/openai/openai-go/v3"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/pricing"
	"github.com/polyloop/polyloop/internal/provider"
)

// errNoChoices is the cause of a *ResponseError for a completion without
// choices.
var errNoChoices = errors.New("the completion has no choices")

// reply converts a completion into the library's reply. requested is the
// model the request named; callID is the library's id of the call, used to
// name tool calls that came without an id. A completion without choices is
// a *ResponseError carrying the usage the completion reports.
func (c *Client) reply(resp *openai.ChatCompletion, x *provider.Exchange, requested, callID string) (polyloop.ModelReply, error) {
	var usage *openai.CompletionUsage
	if resp.JSON.Usage.Valid() {
		usage = &resp.Usage
	}
	return c.convert(resp, x, requested, callID, usage)
}

// convert is reply with the completion's usage given apart (nil: none
// reported), as a stream reports it in a chunk of its own.
func (c *Client) convert(resp *openai.ChatCompletion, x *provider.Exchange, requested, callID string, usage *openai.CompletionUsage) (polyloop.ModelReply, error) {
	model := cmp.Or(resp.Model, requested)
	if len(resp.Choices) == 0 {
		e := &ResponseError{StatusCode: x.Status(), RequestID: x.RequestID(), Err: errNoChoices}
		if usage != nil {
			u := c.usage(*usage, model)
			e.Usage = &u
		}
		return polyloop.ModelReply{}, e
	}
	ch := resp.Choices[0]
	r := polyloop.ModelReply{
		Text:         ch.Message.Content,
		ToolCalls:    toolCalls(ch.Message.ToolCalls, callID),
		Model:        model,
		FinishReason: ch.FinishReason,
		RequestID:    x.RequestID(),
	}
	if ch.Message.Refusal != "" {
		if r.Text == "" {
			r.Text = ch.Message.Refusal
		}
		r.FinishReason = "refusal"
	}
	if usage != nil {
		r.Usage = c.usage(*usage, r.Model)
	}
	return r, nil
}

func toolCalls(calls []openai.ChatCompletionMessageToolCallUnion, callID string) []polyloop.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]polyloop.ToolCall, len(calls))
	for i, tc := range calls {
		id := tc.ID
		if id == "" {
			id = "polyloop_" + callID + "_" + strconv.Itoa(i)
		}
		out[i] = polyloop.ToolCall{ID: id, Name: tc.Function.Name, Args: argumentsJSON(tc.Function.Arguments)}
	}
	return out
}

// argumentsJSON keeps the arguments the model wrote as JSON in the form
// encoding/json gives a RawMessage (compact, with <, > and & escaped), so
// that the reply reads the same, byte for byte, before and after a round
// trip through the log. Arguments that are not valid JSON are kept as a JSON
// string for the parser to reject; empty arguments are absent.
func argumentsJSON(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	if b, err := json.Marshal(json.RawMessage(s)); err == nil {
		return b
	}
	quoted, _ := json.Marshal(s) // a string always marshals
	return quoted
}

// usage maps the completion's usage; prompt tokens include cached ones and
// completion tokens include reasoning ones, as OpenAI counts them.
func (c *Client) usage(u openai.CompletionUsage, model string) polyloop.Usage {
	cached := u.PromptTokensDetails.CachedTokens
	write := u.PromptTokensDetails.CacheWriteTokens
	out := polyloop.Usage{
		InputTokens:     u.PromptTokens,
		OutputTokens:    u.CompletionTokens,
		CachedTokens:    cached,
		ReasoningTokens: u.CompletionTokensDetails.ReasoningTokens,
	}
	n := pricing.Tokens{Input: max(u.PromptTokens-cached-write, 0), CachedInput: cached, CacheWrite: write,
		Output: u.CompletionTokens}
	if usd, ok := c.p.Prices.Cost(model, n); ok {
		out.CostUSD = &usd
	}
	return out
}
