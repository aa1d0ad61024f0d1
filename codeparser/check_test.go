package codeparser_test

import (
	"errors"

	"github.com/polyloop/polyloop"
)

// codeAction is what parsertest.Parse checks of this parser's actions: one
// code action per reply, with code and a language and no tool.
func codeAction(a polyloop.Action, i int, _ polyloop.ModelReply) error {
	if i > 0 {
		return errors.New("an Act of several actions: the parser makes one code action per reply")
	}
	if a.Tool != "" || a.Code == "" || a.Lang == "" {
		return errors.New("want empty tool, code and lang")
	}
	return nil
}
