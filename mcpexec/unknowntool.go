package mcpexec

import "fmt"

// UnknownToolError is returned by New when Options.Tools or Options.Replay
// names a tool the server does not list.
type UnknownToolError struct {
	// Option is "Tools" or "Replay".
	Option string
	// Tool is the name given; Server identifies the server (as Describe
	// does); Offered are the tools the server lists, in its order.
	Tool    string
	Server  string
	Offered []string
}

func (e *UnknownToolError) Error() string {
	return fmt.Sprintf("mcpexec: Options.%s names %q, which %s does not have", e.Option, e.Tool, e.Server)
}
