package argcheck

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
)

const weather = `{"type":"object","properties":{
	"city":{"type":"string","minLength":1},
	"unit":{"enum":["c","f"]},
	"days":{"type":"integer"},
	"note":{"type":["string","null"]},
	"opts":{"type":"object","properties":{"depth":{"type":"integer"}},"additionalProperties":false},
	"tags":{"type":"array","items":{"type":"string"}},
	"place":{"$ref":"#/$defs/place"}
},"required":["city"],"additionalProperties":false,
"$defs":{"place":{"type":"object","properties":{"lat":{"type":"number"}},"required":["lat"]}}}`

func checker(t *testing.T, tools ...polyloop.ToolSpec) *Checker {
	t.Helper()
	if len(tools) == 0 {
		tools = []polyloop.ToolSpec{{Name: "get_weather", Parameters: json.RawMessage(weather)}}
	}
	return New(tools)
}

func TestCheck(t *testing.T) {
	t.Parallel()
	c := checker(t)
	tests := []struct {
		name, args string
		want       []string // nil: the arguments match
	}{
		{"valid", `{"city":"Paris","unit":"c","days":2,"note":null,"opts":{"depth":1},"tags":["a"],"place":{"lat":1.5}}`, nil},
		{"only the required", `{"city":"Paris"}`, nil},
		{"missing required", `{"unit":"c"}`, []string{`lack the required field "city" (a string)`}},
		{"wrong type", `{"city":12}`, []string{`The field "city" of your call to "get_weather" must be a string, not a number.`}},
		{"integer wanted", `{"city":"a","days":1.5}`, []string{`"days"`, "must be an integer, not a number"}},
		{"one of several types", `{"city":"a","note":true}`, []string{`"note"`, "must be a string or null, not a boolean"}},
		{"enum", `{"city":"a","unit":"k"}`, []string{`The field "unit" of your call to "get_weather" must be one of "c", "f".`}},
		{"unknown field", `{"city":"a","town":"b"}`, []string{`The field "town" of your call to "get_weather" is not a parameter of that tool (its parameters: "city", "days", "note", "opts", "place", "tags", "unit").`}},
		{"nested wrong type", `{"city":"a","opts":{"depth":"deep"}}`, []string{`The field "opts.depth"`, "must be an integer, not a string"}},
		{"nested unknown field", `{"city":"a","opts":{"width":1}}`, []string{`The field "opts.width" of your call to "get_weather" is not a field of "opts" (its fields: "depth").`}},
		{"object wanted", `{"city":"a","opts":[1]}`, []string{`"opts"`, "must be an object, not an array"}},
		{"array item", `{"city":"a","tags":["x",3]}`, []string{`The field "tags[1]"`, "must be a string, not a number"}},
		{"through a $ref", `{"city":"a","place":{"lat":"north"}}`, []string{`"place.lat"`, "must be a number, not a string"}},
		{"required through a $ref", `{"city":"a","place":{}}`, []string{`lack the required field "place.lat" (a number)`}},
		{"other constraint shows the schema", `{"city":""}`, []string{`The field "city" of your call to "get_weather" does not match its schema: {"minLength":1,"type":"string"}.`}},
	}
	for _, tt := range tests {
		got, ok := c.Check("get_weather", json.RawMessage(tt.args))
		switch {
		case tt.want == nil && !ok:
			t.Errorf("%s: refused with %q, want accepted", tt.name, got)
		case tt.want != nil && ok:
			t.Errorf("%s: accepted, want refused", tt.name)
		}
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: feedback %q does not contain %q", tt.name, got, w)
			}
		}
		if again, _ := c.Check("get_weather", json.RawMessage(tt.args)); again != got {
			t.Errorf("%s: not deterministic: %q then %q", tt.name, got, again)
		}
	}
}

func TestCheckCrossFieldRule(t *testing.T) {
	t.Parallel()
	c := checker(t, polyloop.ToolSpec{Name: "t", Parameters: json.RawMessage(
		`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"oneOf":[{"required":["a"]},{"required":["b"]}]}`)})
	got, ok := c.Check("t", json.RawMessage(`{"a":"x","b":"y"}`))
	if ok || !strings.Contains(got, `The arguments of your call to "t" do not match the tool's parameter schema: {"oneOf":[{"required":["a"]}`) {
		t.Fatalf("Check = %q, %v; want the whole schema shown", got, ok)
	}
}

func TestUncheckedTools(t *testing.T) {
	t.Parallel()
	c := New([]polyloop.ToolSpec{
		{Name: "free"},
		{Name: "broken", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/$defs/none"}}}`)},
		{Name: "not json", Parameters: json.RawMessage(`{`)},
		{Name: "checked", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)},
	})
	for _, tool := range []string{"free", "broken", "not json", "unlisted"} {
		if got, ok := c.Check(tool, json.RawMessage(`{"a":1}`)); !ok {
			t.Errorf("%s: refused (%q); a tool without a usable schema is not checked", tool, got)
		}
	}
	if _, ok := c.Check("checked", json.RawMessage(`{"a":1}`)); ok {
		t.Error("checked: accepted a number for a string")
	}
	if got := c.Tools(); len(got) != 1 || got[0] != "checked" {
		t.Errorf("Tools() = %q, want [checked]", got)
	}
	if New(nil).Tools() != nil || New(nil).Hash() != "" {
		t.Error("a checker of no tools has tools or a hash")
	}
}

func TestNumberOutOfRangeIsLeftToTheExecutor(t *testing.T) {
	t.Parallel()
	if got, ok := checker(t).Check("get_weather", json.RawMessage(`{"city":"a","days":1e999}`)); !ok {
		t.Fatalf("refused with %q: a value the checker cannot decode is not judged", got)
	}
}

func TestHash(t *testing.T) {
	t.Parallel()
	a := polyloop.ToolSpec{Name: "a", Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`)}
	b := polyloop.ToolSpec{Name: "b", Parameters: json.RawMessage(`{"type": "object"}`)}
	b2 := polyloop.ToolSpec{Name: "b", Parameters: json.RawMessage(`{"type":"object","required":["y"]}`)}
	h1, h2 := New([]polyloop.ToolSpec{a, b}).Hash(), New([]polyloop.ToolSpec{b, a}).Hash()
	if h1 == "" || h1 != h2 || !strings.HasPrefix(h1, "sha256:") {
		t.Errorf("hashes %q and %q: want one sha256 for the same schemas in any order", h1, h2)
	}
	spaced := polyloop.ToolSpec{Name: "b", Parameters: json.RawMessage("{ \"type\" :\n \"object\" }")}
	if New([]polyloop.ToolSpec{a, spaced}).Hash() != h1 {
		t.Error("white space in a schema changed the hash")
	}
	if New([]polyloop.ToolSpec{a, b2}).Hash() == h1 {
		t.Error("a changed schema kept the hash")
	}
}

func TestFeedbackBounded(t *testing.T) {
	t.Parallel()
	long := `{"type":"object","properties":{"k":{"type":"string","pattern":"^` + strings.Repeat("a", 5000) + `$"}}}`
	c := New([]polyloop.ToolSpec{{Name: "t", Parameters: json.RawMessage(long)}})
	got, ok := c.Check("t", json.RawMessage(`{"k":"b"}`))
	if ok || len(got) > 1000 || !strings.Contains(got, "…") {
		t.Fatalf("feedback of %d bytes (%v): want a bounded one, marked cut", len(got), ok)
	}
}
