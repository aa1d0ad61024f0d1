package toolcallparser_test

import (
	"errors"
	"fmt"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/parsertest"
)

// callAction is what parsertest.Parse checks of each action of this
// parser's Acts: action i is the reply's tool call i, with its id and name,
// and args that are one JSON object sharing no memory with the reply.
func callAction(a polyloop.Action, i int, reply polyloop.ModelReply) error {
	if err := parsertest.ToolAction(a); err != nil {
		return err
	}
	if i >= len(reply.ToolCalls) {
		return fmt.Errorf("action %d of a reply with %d tool calls", i, len(reply.ToolCalls))
	}
	c := reply.ToolCalls[i]
	if a.CallID != c.ID || a.Tool != c.Name {
		return fmt.Errorf("action %d is call %q to %q, want the reply's call %q to %q", i, a.CallID, a.Tool, c.ID, c.Name)
	}
	if len(a.Args) > 0 && len(c.Args) > 0 && &a.Args[0] == &c.Args[0] {
		return errors.New("action args share memory with the reply")
	}
	return nil
}
