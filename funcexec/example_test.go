package funcexec_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/funcexec"
)

type weatherArgs struct {
	City string `json:"city" jsonschema:"the city"`
}

func ExampleRegister() {
	tools := funcexec.New()
	funcexec.MustRegister(tools, "weather", "Current weather of a city.", polyloop.ReplaySafe,
		func(_ context.Context, a weatherArgs) (string, error) { return "sunny in " + a.City, nil })

	// The model is shown exactly what runs.
	agent := polyloop.Agent{Name: "forecaster", Tools: tools.ToolSpecs()}
	fmt.Println(agent.Tools[0].Name, string(agent.Tools[0].Parameters))

	out, _ := tools.Execute(context.Background(), polyloop.Action{Tool: "weather", Args: json.RawMessage(`{"city":"Oslo"}`)})
	fmt.Println(out.Status, out.Observation)
	out, _ = tools.Execute(context.Background(), polyloop.Action{Tool: "weather", Args: json.RawMessage(`{"town":"Oslo"}`)})
	fmt.Println(out.Status)
	// Output:
	// weather {"type":"object","properties":{"city":{"type":"string","description":"the city"}},"required":["city"],"additionalProperties":false}
	// executed sunny in Oslo
	// not_executed
}
