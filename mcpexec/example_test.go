package mcpexec_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/mcpexec"
)

func ExampleNew() {
	ctx := context.Background()
	// A server with one read-only tool, reached here in process; a real one
	// is Options{Command: []string{"my-mcp-server"}} or Options{URL: "https://…/mcp"}.
	server := mcp.NewServer(&mcp.Implementation{Name: "dictionary", Version: "v1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "define", Description: "Defines a word.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Word string `json:"word"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Word + ": a unit of language"}}}, nil, nil
		})
	clientT, serverT := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverT, nil)
	if err != nil {
		panic(err)
	}
	defer ss.Close()

	tools, err := mcpexec.New(ctx, mcpexec.Options{Transport: clientT, Identity: "dictionary (in process)"})
	if err != nil {
		panic(err)
	}
	defer tools.Close()
	for _, s := range tools.ToolSpecs() {
		fmt.Println(s.Name, s.Replay) // read-only: safe to replay
	}
	out, err := tools.Execute(ctx, polyloop.Action{Tool: "define", Args: json.RawMessage(`{"word":"word"}`)})
	fmt.Println(out.Status, out.Observation, err)
	out, err = tools.Execute(ctx, polyloop.Action{Tool: "define", Args: json.RawMessage(`{}`)})
	fmt.Println(out.Status, err) // refused before reaching the server
	// Output:
	// define replay_safe
	// executed word: a unit of language <nil>
	// not_executed <nil>
}
