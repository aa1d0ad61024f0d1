package codeparser_test

import (
	"errors"

	"github.com/polyloop/polyloop"
)

// codeAction is what parsertest.Parse checks of this parser's actions:
// code with a language, no tool.
func codeAction(a polyloop.Action, _ polyloop.ModelReply) error {
	if a.Tool != "" || a.Code == "" || a.Lang == "" {
		return errors.New("want empty tool, code and lang")
	}
	return nil
}
