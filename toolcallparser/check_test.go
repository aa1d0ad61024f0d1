package toolcallparser_test

import (
	"errors"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/parsertest"
)

// callAction is what parsertest.Parse checks of this parser's actions: a
// tool and args that are one JSON object sharing no memory with the reply.
func callAction(a polyloop.Action, reply polyloop.ModelReply) error {
	if err := parsertest.ToolAction(a); err != nil {
		return err
	}
	if len(a.Args) > 0 && len(reply.ToolCalls) > 0 && len(reply.ToolCalls[0].Args) > 0 &&
		&a.Args[0] == &reply.ToolCalls[0].Args[0] {
		return errors.New("action args share memory with the reply")
	}
	return nil
}
