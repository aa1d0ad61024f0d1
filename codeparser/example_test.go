package codeparser_test

import (
	"fmt"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/codeparser"
)

func Example() {
	p := codeparser.New(codeparser.Options{FinalMarker: "FINAL ANSWER:"})
	for _, text := range []string{
		"Let me count.\n```bash\nwc -l notes.txt\n```",
		"FINAL ANSWER: 12 lines",
		"```bash\nls\n```\n```bash\npwd\n```",
	} {
		switch d := p.Parse(polyloop.ModelReply{Text: text}).(type) {
		case polyloop.Act:
			fmt.Printf("act %s: %s\n", d.Actions[0].Lang, d.Actions[0].Code)
		case polyloop.Final:
			fmt.Println("final:", d.Answer)
		case polyloop.Invalid:
			fmt.Println("invalid:", d.Feedback)
		}
	}
	// Output:
	// act bash: wc -l notes.txt
	// final: 12 lines
	// invalid: Your reply contains 2 ```bash code blocks; send exactly one per turn. Put all the code for this step in a single ```bash block.
}
