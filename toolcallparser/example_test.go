package toolcallparser_test

import (
	"fmt"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/toolcallparser"
)

func Example() {
	p := toolcallparser.New(toolcallparser.Options{})
	replies := []polyloop.ModelReply{
		{ToolCalls: []polyloop.ToolCall{{ID: "call_1", Name: "read", Args: []byte(`{"path": "notes.txt"}`)}}},
		{Text: "The file has 12 lines."},
		{ToolCalls: []polyloop.ToolCall{{ID: "call_2", Name: "read", Args: []byte(`{"path": `)}}},
	}
	for _, r := range replies {
		switch d := p.Parse(r).(type) {
		case polyloop.Act:
			fmt.Printf("act %s %s %s\n", d.Actions[0].CallID, d.Actions[0].Tool, d.Actions[0].Args)
		case polyloop.Final:
			fmt.Println("final:", d.Answer)
		case polyloop.Invalid:
			fmt.Println("invalid:", d.Feedback)
		}
	}
	// Output:
	// act call_1 read {"path":"notes.txt"}
	// final: The file has 12 lines.
	// invalid: The arguments of your call to "read" are not valid JSON: unexpected end of JSON input (at byte 9). Send the arguments as one JSON object.
}
