package anthropicmodel

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/provider"
)

// DefaultMaxTokens is the max_tokens sent, which the Messages API requires,
// when neither ModelParams.MaxOutputTokens nor Options.MaxTokens sets it.
const DefaultMaxTokens = 4096

// params builds the Messages request from the library's request.
// ModelParams.Extra entries become top-level fields of the body.
func (c *Client) params(req polyloop.ModelRequest) (anthropic.MessageNewParams, error) {
	var p anthropic.MessageNewParams
	p.Model = anthropic.Model(c.p.ChooseModel(req.Params.Model))
	if p.Model == "" {
		return p, ErrNoModel
	}
	p.MaxTokens = int64(req.Params.MaxOutputTokens)
	if p.MaxTokens <= 0 {
		p.MaxTokens = int64(c.maxTokens)
	}
	var err error
	if p.System, p.Messages, err = messages(provider.PairToolResults(req.Messages, c.p.UnansweredToolResult)); err != nil {
		return p, err
	}
	if p.Tools, err = tools(req.Tools); err != nil {
		return p, err
	}
	if err := c.checkUnsupported(req.Params); err != nil {
		return p, err
	}
	p.StopSequences = req.Params.Stop
	if len(req.Params.Extra) > 0 {
		p.SetExtraFields(maps.Clone(req.Params.Extra))
	}
	return p, nil
}

// unsupportedParams are the ModelParams the Messages API (version
// 2026-10-21, which the SDK sends) has no field for: it refuses temperature,
// top_p and top_k with a 400, and has never had a seed.
func unsupportedParams(mp polyloop.ModelParams) []string {
	var names []string
	if mp.Temperature != nil {
		names = append(names, "temperature")
	}
	if mp.TopP != nil {
		names = append(names, "top_p")
	}
	if mp.Seed != nil {
		names = append(names, "seed")
	}
	return names
}

// checkUnsupported refuses parameters the API cannot honour, unless
// Options.DropUnsupportedParams says to leave them out.
func (c *Client) checkUnsupported(mp polyloop.ModelParams) error {
	names := unsupportedParams(mp)
	if len(names) == 0 || c.dropUnsupported {
		return nil
	}
	return fmt.Errorf("%w: %v (set Options.DropUnsupportedParams to leave them out)", ErrUnsupportedParam, names)
}

// turn is one message of the request, before conversion: consecutive
// messages of the same role merge into one turn, because the API wants the
// roles to alternate.
type turn struct {
	assistant bool
	blocks    []anthropic.ContentBlockParamUnion
}

// messages converts a history whose tool results are already paired. System
// messages go to the system prompt; each assistant message's tool results
// open the user turn that follows it, as the API requires.
func messages(h []polyloop.Message) ([]anthropic.TextBlockParam, []anthropic.MessageParam, error) {
	var system []anthropic.TextBlockParam
	var turns []turn
	add := func(assistant bool, blocks ...anthropic.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(turns); n > 0 && turns[n-1].assistant == assistant {
			turns[n-1].blocks = append(turns[n-1].blocks, blocks...)
			return
		}
		turns = append(turns, turn{assistant: assistant, blocks: blocks})
	}
	for i, m := range h {
		switch {
		case m.Role == polyloop.RoleSystem:
			if m.Content != "" {
				system = append(system, anthropic.TextBlockParam{Text: m.Content})
			}
		case m.Role == polyloop.RoleUser, m.Role == polyloop.RoleTool && m.ToolCallID == "":
			add(false, text(m.Content)...)
		case m.Role == polyloop.RoleTool:
			add(false, toolResult(m))
		case m.Role == polyloop.RoleAssistant:
			add(true, assistantBlocks(m)...)
		default:
			return nil, nil, fmt.Errorf("%w: message %d has unknown role %q", ErrBadRequest, i, m.Role)
		}
	}
	out := make([]anthropic.MessageParam, len(turns))
	for i, t := range turns {
		if t.assistant {
			out[i] = anthropic.NewAssistantMessage(t.blocks...)
		} else {
			out[i] = anthropic.NewUserMessage(t.blocks...)
		}
	}
	return system, out, nil
}

// text is a text block, or none for an empty text (the API refuses empty
// text blocks).
func text(s string) []anthropic.ContentBlockParamUnion {
	if s == "" {
		return nil
	}
	return []anthropic.ContentBlockParamUnion{anthropic.NewTextBlock(s)}
}

// toolResult answers a tool call. A synthetic observation (the library's
// text for an action not executed, or an unanswered call) is flagged
// is_error.
func toolResult(m polyloop.Message) anthropic.ContentBlockParamUnion {
	r := anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID}
	if m.Content != "" {
		r.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: m.Content}}}
	}
	if m.Synthetic {
		r.IsError = anthropic.Bool(true)
	}
	return anthropic.ContentBlockParamUnion{OfToolResult: &r}
}

func assistantBlocks(m polyloop.Message) []anthropic.ContentBlockParamUnion {
	blocks := text(m.Content)
	for _, tc := range m.ToolCalls {
		blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, toolInput(tc.Args), tc.Name))
	}
	return blocks
}

// toolInput is a tool call's arguments as the API wants them: a JSON object.
// Arguments that are not an object (they cannot come from this API) are
// sent as an empty object.
func toolInput(args json.RawMessage) json.RawMessage {
	if provider.IsObject(args) {
		return args
	}
	return json.RawMessage(`{}`)
}

// tools converts the tool specs. The input schema is sent byte for byte as
// the snapshot holds it; an absent schema is an object without properties.
func tools(specs []polyloop.ToolSpec) ([]anthropic.ToolUnionParam, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	out := make([]anthropic.ToolUnionParam, 0, len(specs))
	for _, t := range specs {
		schema, err := provider.ToolSchema(t)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
		}
		tool := anthropic.ToolParam{Name: t.Name, InputSchema: param.Override[anthropic.ToolInputSchemaParam](schema)}
		if t.Description != "" {
			tool.Description = anthropic.String(t.Description)
		}
		out = append(out, anthropic.ToolUnionParam{OfTool: &tool})
	}
	return out, nil
}
