package anthropicmodel

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

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
	b := builder{emptyObservation: c.emptyObservation}
	if p.System, p.Messages, err = b.messages(provider.PairToolResults(req.Messages, c.p.UnansweredToolResult)); err != nil {
		return p, err
	}
	if p.Tools, err = tools(req.Tools); err != nil {
		return p, err
	}
	// disable_parallel_tool_use belongs to tool_choice, which is sent only
	// with tools; unset is the API's default, which allows several tool
	// uses per reply.
	if allow := req.Params.ParallelToolCalls; allow != nil && len(p.Tools) > 0 {
		p.ToolChoice = anthropic.ToolChoiceUnionParam{OfAuto: &anthropic.ToolChoiceAutoParam{DisableParallelToolUse: anthropic.Bool(!*allow)}}
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

// builder converts a history whose tool results are already paired.
type builder struct {
	emptyObservation string // sent for an observation with no visible text
	system           []anthropic.TextBlockParam
	turns            []turn
}

// messages converts the history. System messages go to the system prompt;
// each assistant message's tool results open the user turn that follows
// it, as the API requires. A request that would end on an assistant turn
// (which the API reads as a prefill to continue) is refused.
func (b *builder) messages(h []polyloop.Message) ([]anthropic.TextBlockParam, []anthropic.MessageParam, error) {
	for i, m := range h {
		if err := b.add(m); err != nil {
			return nil, nil, fmt.Errorf("%w: message %d: %w", ErrBadRequest, i, err)
		}
	}
	if n := len(b.turns); n > 0 && b.turns[n-1].assistant {
		return nil, nil, fmt.Errorf("%w: the history ends with an assistant message, which the Messages API would continue as a prefill", ErrBadRequest)
	}
	out := make([]anthropic.MessageParam, len(b.turns))
	for i, t := range b.turns {
		if t.assistant {
			out[i] = anthropic.NewAssistantMessage(t.blocks...)
		} else {
			out[i] = anthropic.NewUserMessage(t.blocks...)
		}
	}
	return b.system, out, nil
}

// add converts one message.
func (b *builder) add(m polyloop.Message) error {
	switch {
	case m.Role == polyloop.RoleSystem:
		if visible(m.Content) {
			b.system = append(b.system, anthropic.TextBlockParam{Text: m.Content})
		}
	case m.Role == polyloop.RoleUser:
		b.append(false, text(m.Content)...)
	case m.Role == polyloop.RoleTool && m.ToolCallID == "":
		b.append(false, anthropic.NewTextBlock(b.observation(m.Content)))
	case m.Role == polyloop.RoleTool:
		b.append(false, toolResult(m))
	case m.Role == polyloop.RoleAssistant:
		b.append(true, assistantBlocks(m)...)
	default:
		return fmt.Errorf("unknown role %q", m.Role)
	}
	return nil
}

// append adds blocks to the last turn when it has the same role, else
// opens a turn.
func (b *builder) append(assistant bool, blocks ...anthropic.ContentBlockParamUnion) {
	if len(blocks) == 0 {
		return
	}
	if n := len(b.turns); n > 0 && b.turns[n-1].assistant == assistant {
		b.turns[n-1].blocks = append(b.turns[n-1].blocks, blocks...)
		return
	}
	b.turns = append(b.turns, turn{assistant: assistant, blocks: blocks})
}

// observation is the text of an observation sent as user text: verbatim,
// or the placeholder when it has no visible text, so that the observation
// is never lost (which would merge the assistant turns around it).
func (b *builder) observation(s string) string {
	if visible(s) {
		return s
	}
	return b.emptyObservation
}

// visible reports whether s has a character other than white space: the
// API refuses text blocks without one.
func visible(s string) bool { return strings.TrimSpace(s) != "" }

// text is a text block, or none for a text without visible characters.
func text(s string) []anthropic.ContentBlockParamUnion {
	if !visible(s) {
		return nil
	}
	return []anthropic.ContentBlockParamUnion{anthropic.NewTextBlock(s)}
}

// toolResult answers a tool call. A synthetic observation (the library's
// text for an action not executed, or an unanswered call) is flagged
// is_error. A result without visible text is sent without content, which
// the API accepts and reads as no output.
func toolResult(m polyloop.Message) anthropic.ContentBlockParamUnion {
	r := anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID}
	if visible(m.Content) {
		r.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: m.Content}}}
	}
	if m.Synthetic {
		r.IsError = anthropic.Bool(true)
	}
	return anthropic.ContentBlockParamUnion{OfToolResult: &r}
}

// assistantBlocks are a reply's text, unless it has no visible character,
// and its tool calls.
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
