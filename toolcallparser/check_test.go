package toolcallparser_test

import (
	"errors"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/parsertest"
)

// checkedParse parses reply with parsertest.Parse, which checks the
// DecisionParser contract; an action must have a tool and args that are one
// JSON object sharing no memory with the reply.
func checkedParse(t *testing.T, p polyloop.DecisionParser, reply polyloop.ModelReply) polyloop.Decision {
	t.Helper()
	return parsertest.Parse(t, p, reply, callAction)
}

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
