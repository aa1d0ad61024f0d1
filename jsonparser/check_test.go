package jsonparser_test

import (
	"errors"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/parsertest"
)

// jsonAction is what parsertest.Parse checks of each action of this
// parser's Acts: a tool and object args, no call id and no code.
func jsonAction(a polyloop.Action, _ int, _ polyloop.ModelReply) error {
	if a.CallID != "" || a.Code != "" {
		return errors.New("want no call id and no code")
	}
	return parsertest.ToolAction(a)
}
