package main

import (
	"context"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpSlowMain is the tests' "mcpslow" command: an MCP stdio server whose
// tool slow touches "started" in its working directory, waits 3 seconds
// and answers "slept".
func mcpSlowMain() {
	s := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Waits, then answers."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if err := os.WriteFile("started", nil, 0o644); err != nil {
				return nil, nil, err
			}
			select {
			case <-time.After(3 * time.Second):
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slept"}}}, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
}
