package polyloop

import "encoding/json"

// Role is the speaker of a message in the model's history.
type Role string

// The roles of a history message.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	// RoleTool carries an observation. ToolCallID names the native tool call
	// it answers; it is empty for actions that did not come from a native
	// tool call (code actions, JSON-in-text actions), which providers send as
	// a user message.
	RoleTool Role = "tool"
)

// Message is one entry of the history the model sees. The history is rebuilt
// from the run log (see History), so the same log always yields the same
// messages.
type Message struct {
	Role       Role       `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// Synthetic marks an observation written by the library (from
	// Agent.Synthetic) rather than by the executor.
	Synthetic bool `json:"synthetic,omitempty"`
	// Feedback marks a user message carrying an Invalid decision's feedback.
	Feedback bool `json:"feedback,omitempty"`
}

// ToolCall is a native tool call in a model reply.
type ToolCall struct {
	// ID is the provider's id for the call, used to pair the tool result.
	ID   string `json:"id,omitempty"`
	Name string `json:"name"`
	// Args is always valid JSON: arguments a model wrote that are not JSON
	// are kept as a JSON string of their text, so that the reply can be
	// recorded and the parser can say what was wrong with them.
	Args json.RawMessage `json:"args,omitempty"`
}

// Usage is what one model call consumed.
type Usage struct {
	InputTokens     int64 `json:"input_tokens,omitempty"`
	OutputTokens    int64 `json:"output_tokens,omitempty"`
	CachedTokens    int64 `json:"cached_tokens,omitempty"`
	ReasoningTokens int64 `json:"reasoning_tokens,omitempty"`
	// CostUSD is the cost of the call when the provider or a price table
	// knows it; nil means unknown (never read nil as zero).
	CostUSD *float64 `json:"cost_usd,omitempty"`
	// TokensUnknown says that the token counts are only a lower bound: an
	// attempt of the call may have been billed for tokens it never reported
	// (its request was sent, then it timed out, lost its connection or had
	// its reply cut short). CostUSD is then nil. The totals read it as
	// tokens and cost unknown.
	TokensUnknown bool `json:"tokens_unknown,omitempty"`
}

// Tokens is input plus output tokens: what token budgets count.
func (u Usage) Tokens() int64 { return u.InputTokens + u.OutputTokens }

// UsageCarrier is implemented by a ModelClient error that knows what the
// failed call consumed, or that it may have been billed: a reply received
// and then rejected, a stream broken part-way, a request sent that then
// timed out (a Usage with TokensUnknown). The library keeps that usage on
// the failed call's result and counts it in the totals: a billed call is
// never read as free.
type UsageCarrier interface {
	error
	CallUsage() Usage
}

// CostReporter is an optional interface of a ModelClient: KnowsCost reports
// whether the client will know the cost of the calls it makes with params
// (a price for the model, or a provider that reports cost). The runner
// refuses an agent with a cost budget (Limits.MaxCostUSD) when its client
// does not implement CostReporter or says it will not know the cost: such a
// budget could never stop the run (ErrUncheckableBudget). KnowsCost MUST be
// deterministic and cheap; it is called once per Run or Resume.
type CostReporter interface {
	KnowsCost(params ModelParams) bool
}

// ModelRequest is what the library asks of a ModelClient.
type ModelRequest struct {
	RunID string `json:"run_id"`
	Step  int    `json:"step"`
	// CallID is the library's id of this call (see ModelCallIntent); it is
	// for logging and idempotency keys, not for the model.
	CallID string `json:"call_id"`
	// Messages is the history: system prompt, task, then the completed
	// steps. Owned by the library: read it, do not keep or modify it.
	Messages []Message `json:"messages"`
	// Tools are the agent's tool specs, in the agent's order.
	Tools  []ToolSpec  `json:"tools,omitempty"`
	Params ModelParams `json:"params"`
}

// ModelReply is what the model answered.
type ModelReply struct {
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	Usage     Usage      `json:"usage"`
	// Model is the provider's id of the model that answered.
	Model string `json:"model,omitempty"`
	// FinishReason is the provider's reason for ending the reply.
	FinishReason string `json:"finish_reason,omitempty"`
	// Attempts is how many requests the client made (1 without retries).
	Attempts int `json:"attempts,omitempty"`
	// RequestID is the provider's request id, when given.
	RequestID string `json:"request_id,omitempty"`
}

// Clone returns a deep copy of the reply: its tool calls, their arguments
// and its cost share no memory with r. A nil or empty ToolCalls stays as it
// was.
func (r ModelReply) Clone() ModelReply {
	if r.ToolCalls != nil {
		calls := make([]ToolCall, len(r.ToolCalls))
		for i, tc := range r.ToolCalls {
			if tc.Args != nil {
				tc.Args = append(json.RawMessage{}, tc.Args...)
			}
			calls[i] = tc
		}
		r.ToolCalls = calls
	}
	if r.Usage.CostUSD != nil {
		cost := *r.Usage.CostUSD
		r.Usage.CostUSD = &cost
	}
	return r
}
