package provider

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
)

func TestCheckReply(t *testing.T) {
	t.Parallel()
	deep := func(n int) json.RawMessage {
		return json.RawMessage(strings.Repeat("[", n) + strings.Repeat("]", n))
	}
	call := func(args json.RawMessage) polyloop.ModelReply {
		return polyloop.ModelReply{Text: "t", ToolCalls: []polyloop.ToolCall{{ID: "c1", Name: "f", Args: args}}}
	}
	tests := []struct {
		name  string
		reply polyloop.ModelReply
		limit polyloop.JSONLimit // "" for none
	}{
		{"plain", call(json.RawMessage(`{"a":1}`)), ""},
		{"arguments at the limit", call(deep(polyloop.MaxJSONDepth)), ""},
		{"arguments one level deeper", call(deep(polyloop.MaxJSONDepth + 1)), polyloop.LimitDepth},
		{"10000 levels", call(deep(10000)), polyloop.LimitDepth},
		{"invalid UTF-8 in arguments", call(json.RawMessage("[\"\xff\"]")), polyloop.LimitUTF8},
		{"text too large for a record", polyloop.ModelReply{Text: strings.Repeat("x", polyloop.MaxRecordBytes)}, polyloop.LimitSize},
		// Escaped, a text of control characters grows sixfold.
		{"text that grows past the limit when escaped", polyloop.ModelReply{Text: strings.Repeat("\x01", polyloop.MaxRecordBytes/6+1)}, polyloop.LimitSize},
	}
	for _, tc := range tests {
		err := CheckReply(tc.reply)
		var le *polyloop.JSONLimitError
		switch {
		case tc.limit == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.limit != "" && (!errors.As(err, &le) || le.Limit != tc.limit || !errors.Is(err, polyloop.ErrJSONLimit)):
			t.Errorf("%s: %v, want a %s limit error", tc.name, err, tc.limit)
		}
	}
}
