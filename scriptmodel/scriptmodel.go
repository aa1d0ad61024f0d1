// Package scriptmodel is a polyloop.ModelClient that answers from a script:
// for tests, demos and benchmarks. It needs no network and costs nothing.
//
// The reply to a request depends only on the request's step (turn i answers
// step i+1), as a deterministic model's reply depends only on what it is
// shown; a retried call of the same step gets the same answer.
package scriptmodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/polyloop/polyloop"
)

// ErrExhausted is returned for a step beyond the script.
var ErrExhausted = errors.New("scriptmodel: script exhausted")

// Turn is one scripted answer.
type Turn struct {
	Text      string
	ToolCalls []polyloop.ToolCall
	// Usage, when nil, is derived deterministically from the request and
	// the reply (see Client).
	Usage *polyloop.Usage
	// Err, when set, is returned instead of a reply: a model failure.
	Err error
	// Delay makes the call take that long (honouring cancellation).
	Delay time.Duration
}

// Reply is a turn answering text.
func Reply(text string) Turn { return Turn{Text: text} }

// Call is a turn answering one tool call with the given id and arguments
// (marshalled to JSON).
func Call(id, tool string, args any) Turn {
	raw, err := json.Marshal(args)
	if err != nil {
		panic(fmt.Sprintf("scriptmodel.Call: %v", err))
	}
	return Turn{ToolCalls: []polyloop.ToolCall{{ID: id, Name: tool, Args: raw}}}
}

// Fail is a turn that fails with err.
func Fail(err error) Turn { return Turn{Err: err} }

// Options configure a Client.
type Options struct {
	// CostPerToken prices derived usage; zero leaves cost unknown (nil).
	CostPerToken float64
	// FailOnCall makes the FailOnCall-th call (counting from 1) fail with
	// FailErr whatever the script says.
	FailOnCall int
	FailErr    error
	// Model is the model id reported in replies (default "script").
	Model string
}

// Client answers from a script. It is safe for concurrent use.
type Client struct {
	turns []Turn
	opts  Options
	calls atomic.Int64
}

// New returns a client answering turns in step order.
func New(turns ...Turn) *Client { return NewWithOptions(Options{}, turns...) }

// NewWithOptions returns a client with options.
func NewWithOptions(opts Options, turns ...Turn) *Client {
	if opts.Model == "" {
		opts.Model = "script"
	}
	return &Client{turns: turns, opts: opts}
}

// Calls returns the number of Complete calls made.
func (c *Client) Calls() int { return int(c.calls.Load()) }

// KnowsCost implements polyloop.CostReporter: the client knows the cost of
// its calls when Options.CostPerToken prices them or every turn gives its
// usage with a cost.
func (c *Client) KnowsCost(polyloop.ModelParams) bool {
	if c.opts.CostPerToken > 0 {
		return true
	}
	for _, t := range c.turns {
		if t.Usage == nil || t.Usage.CostUSD == nil {
			return false
		}
	}
	return len(c.turns) > 0
}

// Describe implements polyloop.Describer.
func (c *Client) Describe() polyloop.Component {
	cfg, _ := json.Marshal(map[string]any{"turns": len(c.turns), "model": c.opts.Model})
	return polyloop.Component{Name: "scriptmodel", Config: cfg}
}

// Complete implements polyloop.ModelClient. Derived usage: 10 input tokens
// per message plus one per 4 bytes of content, one output token per 4 bytes
// of the reply's text and arguments.
func (c *Client) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	n := c.calls.Add(1)
	if err := ctx.Err(); err != nil {
		return polyloop.ModelReply{}, err
	}
	if c.opts.FailOnCall > 0 && int(n) == c.opts.FailOnCall {
		if c.opts.FailErr != nil {
			return polyloop.ModelReply{}, c.opts.FailErr
		}
		return polyloop.ModelReply{}, fmt.Errorf("scriptmodel: injected failure on call %d", n)
	}
	i := req.Step - 1
	if i < 0 || i >= len(c.turns) {
		return polyloop.ModelReply{}, fmt.Errorf("%w: no turn for step %d (%d turns)", ErrExhausted, req.Step, len(c.turns))
	}
	t := c.turns[i]
	if t.Delay > 0 {
		timer := time.NewTimer(t.Delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return polyloop.ModelReply{}, ctx.Err()
		case <-timer.C:
		}
	}
	if t.Err != nil {
		return polyloop.ModelReply{}, t.Err
	}
	reply := polyloop.ModelReply{Text: t.Text, ToolCalls: t.ToolCalls, Model: c.opts.Model, FinishReason: "stop", Attempts: 1}
	if len(t.ToolCalls) > 0 {
		reply.FinishReason = "tool_calls"
	}
	if t.Usage != nil {
		reply.Usage = *t.Usage
	} else {
		reply.Usage = c.usage(req, t)
	}
	return reply, nil
}

func (c *Client) usage(req polyloop.ModelRequest, t Turn) polyloop.Usage {
	var in int64
	for _, m := range req.Messages {
		in += 10 + int64(len(m.Content))/4
	}
	out := int64(len(t.Text))/4 + 1
	for _, tc := range t.ToolCalls {
		out += int64(len(tc.Name)+len(tc.Args))/4 + 1
	}
	u := polyloop.Usage{InputTokens: in, OutputTokens: out}
	if c.opts.CostPerToken > 0 {
		cost := float64(in+out) * c.opts.CostPerToken
		u.CostUSD = &cost
	}
	return u
}
