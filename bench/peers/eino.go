package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	"github.com/polyloop/polyloop/bench"
)

// prepareEino is W on Eino's ReAct agent (flow/agent/react), in memory:
// W's scripted replies from a ToolCallingChatModel, noop as an
// InvokableTool. Eino keeps the run in memory; it has no log to resume
// from after a crash (its checkpoints are taken at interrupts only).
func prepareEino(ctx context.Context, w bench.Workload, _ *place) (prepared, error) {
	agent, err := react.NewAgent(ctx, &react.AgentConfig{
		ToolCallingModel: einoModel{steps: w.Steps},
		ToolsConfig:      compose.ToolsNodeConfig{Tools: []tool.BaseTool{einoNoop{}}},
		MaxStep:          2*w.Steps + 10, // a model call and a tool call are a step each
	})
	if err != nil {
		return prepared{}, err
	}
	return prepared{
		run: func(ctx context.Context) error {
			out, err := agent.Generate(ctx, []*schema.Message{schema.UserMessage(w.Task().Input)})
			if err != nil {
				return err
			}
			if out.Content != bench.FinalAnswer {
				return fmt.Errorf("eino: the run answered %q, want %q", out.Content, bench.FinalAnswer)
			}
			return nil
		},
		close: func() error { return nil },
	}, nil
}

// einoModel answers as W's scripted model: the reply to a history with n
// assistant messages is W's reply n+1.
type einoModel struct{ steps int }

func (m einoModel) Generate(_ context.Context, input []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	n := 0
	for _, msg := range input {
		if msg.Role == schema.Assistant {
			n++
		}
	}
	if n >= m.steps {
		return schema.AssistantMessage(bench.FinalAnswer, nil), nil
	}
	args, err := json.Marshal(map[string]any{"i": n + 1, "note": bench.Note})
	if err != nil {
		return nil, err
	}
	call := schema.ToolCall{ID: "call_" + strconv.Itoa(n+1), Type: "function", Function: schema.FunctionCall{Name: "noop", Arguments: string(args)}}
	return schema.AssistantMessage(bench.ReplyText, []schema.ToolCall{call}), nil
}

func (m einoModel) Stream(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, input, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

func (m einoModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return m, nil }

// einoNoop is W's noop tool.
type einoNoop struct{}

func (einoNoop) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{Name: "noop", Desc: "Does nothing and returns a fixed text.",
		ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{
			"i": {Type: schema.Integer}, "note": {Type: schema.String},
		})}, nil
}

func (einoNoop) InvokableRun(context.Context, string, ...tool.Option) (string, error) {
	return bench.ToolResult, nil
}
