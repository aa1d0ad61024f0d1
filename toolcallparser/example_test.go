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
		{ToolCalls: []polyloop.ToolCall{
			{ID: "call_2", Name: "read", Args: []byte(`{"path": "a.txt"}`)},
			{ID: "call_3", Name: "read", Args: []byte(`{"path": "b.txt"}`)},
		}},
		{Text: "The file has 12 lines."},
		{ToolCalls: []polyloop.ToolCall{{ID: "call_4", Name: "read", Args: []byte(`{"path": `)}}},
	}
	for _, r := range replies {
		switch d := p.Parse(r).(type) {
		case polyloop.Act:
			for _, a := range d.Actions {
				fmt.Printf("act %s %s %s\n", a.CallID, a.Tool, a.Args)
			}
		case polyloop.Final:
			fmt.Println("final:", d.Answer)
		case polyloop.Invalid:
			fmt.Println("invalid:", d.Feedback)
		}
	}
	// Output:
	// act call_1 read {"path":"notes.txt"}
	// act call_2 read {"path":"a.txt"}
	// act call_3 read {"path":"b.txt"}
	// final: The file has 12 lines.
	// invalid: The arguments of your call to "read" are not valid JSON: unexpected end of JSON input (at byte 9). Send the arguments as one JSON object.
}
