package jsonparser_test

import (
	"errors"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/parsertest"
)

// checkedParse parses reply with parsertest.Parse, which checks the
// DecisionParser contract; an action must have a tool and object args, no
// call id and no code.
func checkedParse(t *testing.T, p polyloop.DecisionParser, reply polyloop.ModelReply) polyloop.Decision {
	t.Helper()
	return parsertest.Parse(t, p, reply, jsonAction)
}

func jsonAction(a polyloop.Action, _ polyloop.ModelReply) error {
	if a.CallID != "" || a.Code != "" {
		return errors.New("want no call id and no code")
	}
	return parsertest.ToolAction(a)
}
