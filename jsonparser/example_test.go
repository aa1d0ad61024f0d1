package jsonparser_test

import (
	"fmt"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/jsonparser"
)

func Example() {
	p := jsonparser.New(jsonparser.Options{Tools: []polyloop.ToolSpec{{
		Name:       "read",
		Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"}}}`),
	}}})
	for _, text := range []string{
		"```json\n{\"tool\": \"read\", \"args\": {\"path\": \"notes.txt\"}}\n```",
		`I'll read it: {"tool": "read", "path": "notes.txt"}`,
		`[{"tool": "read", "path": "a.txt"}, {"tool": "read", "path": "b.txt"}]`,
		`{"final": "12 lines"}`,
		`{"tool": "read", "file": "notes.txt"}`,
	} {
		switch d := p.Parse(polyloop.ModelReply{Text: text}).(type) {
		case polyloop.Act:
			for _, a := range d.Actions {
				fmt.Printf("act %s %s\n", a.Tool, a.Args)
			}
		case polyloop.Final:
			fmt.Println("final:", d.Answer)
		case polyloop.Invalid:
			fmt.Println("invalid:", d.Feedback)
		}
	}
	// Output:
	// act read {"path":"notes.txt"}
	// act read {"path":"notes.txt"}
	// act read {"path":"a.txt"}
	// act read {"path":"b.txt"}
	// final: 12 lines
	// invalid: The field "file" of your call to "read" is not a parameter of that tool (its parameters: "path"). Put the arguments inside "args".
}
