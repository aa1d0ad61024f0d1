package main

import (
	"context"
	"os"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpAddMain is the tests' "mcpadd" command: an MCP stdio server whose
// tool add answers the sum of its integers a and b (the sweep benchmark's
// tool, issue 36).
func mcpAddMain() {
	s := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "v1"}, nil)
	type args struct {
		A int `json:"a" jsonschema:"the first integer"`
		B int `json:"b" jsonschema:"the second integer"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Adds two integers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(in.A + in.B)}}}, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
}
