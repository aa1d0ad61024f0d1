package codeparser_test

import (
	"errors"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/parsertest"
)

// checkedParse parses reply with parsertest.Parse, which checks the
// DecisionParser contract; an action must be code with a language and no
// tool.
func checkedParse(t *testing.T, p polyloop.DecisionParser, reply polyloop.ModelReply) polyloop.Decision {
	t.Helper()
	return parsertest.Parse(t, p, reply, codeAction)
}

func codeAction(a polyloop.Action, _ polyloop.ModelReply) error {
	if a.Tool != "" || a.Code == "" || a.Lang == "" {
		return errors.New("want empty tool, code and lang")
	}
	return nil
}
