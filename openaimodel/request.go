package openaimodel

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/provider"
)

// The values of Options.MaxTokensField.
const (
	MaxCompletionTokens = "max_completion_tokens"
	MaxTokens           = "max_tokens"
)

// params builds the Chat Completions request from the library's request.
// ModelParams.Extra entries become top-level fields of the body.
func (c *Client) params(req polyloop.ModelRequest) (openai.ChatCompletionNewParams, error) {
	var p openai.ChatCompletionNewParams
	p.Model = shared.ChatModel(c.p.ChooseModel(req.Params.Model))
	if p.Model == "" {
		return p, ErrNoModel
	}
	msgs, err := messages(provider.PairToolResults(req.Messages, c.p.UnansweredToolResult))
	if err != nil {
		return p, err
	}
	p.Messages = msgs
	if p.Tools, err = tools(req.Tools); err != nil {
		return p, err
	}
	// The API refuses parallel_tool_calls without tools; unset is its
	// default, which allows several calls per reply.
	if allow := req.Params.ParallelToolCalls; allow != nil && len(p.Tools) > 0 {
		p.ParallelToolCalls = openai.Bool(*allow)
	}
	c.sampling(&p, req.Params)
	if len(req.Params.Extra) > 0 {
		p.SetExtraFields(maps.Clone(req.Params.Extra))
	}
	return p, nil
}

// sampling sets the parameters that shape generation.
func (c *Client) sampling(p *openai.ChatCompletionNewParams, mp polyloop.ModelParams) {
	if mp.Temperature != nil {
		p.Temperature = openai.Float(*mp.Temperature)
	}
	if mp.TopP != nil {
		p.TopP = openai.Float(*mp.TopP)
	}
	if mp.Seed != nil {
		p.Seed = openai.Int(*mp.Seed)
	}
	if len(mp.Stop) > 0 {
		p.Stop.OfStringArray = mp.Stop
	}
	if mp.MaxOutputTokens > 0 {
		if c.maxTokensField == MaxTokens {
			p.MaxTokens = openai.Int(int64(mp.MaxOutputTokens))
		} else {
			p.MaxCompletionTokens = openai.Int(int64(mp.MaxOutputTokens))
		}
	}
}

// messages converts a history whose tool results are already paired.
func messages(h []polyloop.Message) ([]openai.ChatCompletionMessageParamUnion, error) {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(h))
	for i, m := range h {
		switch {
		case m.Role == polyloop.RoleSystem:
			out = append(out, openai.SystemMessage(m.Content))
		case m.Role == polyloop.RoleUser, m.Role == polyloop.RoleTool && m.ToolCallID == "":
			out = append(out, openai.UserMessage(m.Content))
		case m.Role == polyloop.RoleTool:
			out = append(out, openai.ToolMessage(m.Content, m.ToolCallID))
		case m.Role == polyloop.RoleAssistant:
			out = append(out, assistant(m))
		default:
			return nil, fmt.Errorf("%w: message %d has unknown role %q", ErrBadRequest, i, m.Role)
		}
	}
	return out, nil
}

func assistant(m polyloop.Message) openai.ChatCompletionMessageParamUnion {
	var a openai.ChatCompletionAssistantMessageParam
	if m.Content != "" || len(m.ToolCalls) == 0 {
		a.Content.OfString = openai.String(m.Content)
	}
	for _, tc := range m.ToolCalls {
		a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID: tc.ID,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
					Name: tc.Name, Arguments: argumentsText(tc.Args),
				},
			},
		})
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}
}

// argumentsText is the inverse of argumentsJSON: the arguments as the model
// wrote them. Arguments kept as a JSON string (they were not valid JSON) are
// sent back as that string; absent arguments as "{}". The one text that
// does not survive the round trip is a bare JSON string written as
// arguments, which comes back unquoted: arguments must be an object, so
// both forms are equally invalid.
func argumentsText(args json.RawMessage) string {
	if len(args) == 0 {
		return "{}"
	}
	var s string
	if args[0] == '"' && json.Unmarshal(args, &s) == nil {
		return s
	}
	return string(args)
}

// tools converts the tool specs into function tools. The parameter schema is
// sent byte for byte as the snapshot holds it; an absent schema is an object
// without properties.
func tools(specs []polyloop.ToolSpec) ([]openai.ChatCompletionToolUnionParam, error) {
	out := make([]openai.ChatCompletionToolUnionParam, 0, len(specs))
	for _, t := range specs {
		schema, err := provider.ToolSchema(t)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
		}
		def := struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters"`
		}{t.Name, t.Description, schema}
		out = append(out, openai.ChatCompletionFunctionTool(param.Override[shared.FunctionDefinitionParam](def)))
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}
