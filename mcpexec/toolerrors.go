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

// UnusableSchemaError is returned by New when a tool's input schema cannot
// be used to check arguments (Err says why): leave the tool out with
// Options.Tools.
type UnusableSchemaError struct {
	Tool string
	Err  error
}

func (e *UnusableSchemaError) Error() string {
	return fmt.Sprintf("tool %q: its input schema cannot be used for validation "+
		"(leave the tool out with Options.Tools): %v", e.Tool, e.Err)
}

// Unwrap returns why the schema cannot be used.
func (e *UnusableSchemaError) Unwrap() error { return e.Err }
