package argcheck

import (
	"encoding/json"
	"testing"

	"github.com/polyloop/polyloop"
)

// FuzzCheck checks that Check never panics, is deterministic, and refuses
// only what the validator refuses, with feedback. Its seeds run with every
// go test.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{}`, `{"city":"a"}`, `{"city":1}`, `{"opts":{"depth":[]}}`, `{"tags":[1,[2]]}`,
		`{"place":{"lat":null}}`, `{"city":"a","unit":{"x":1}}`, `{"city":"a","z":1}`, `{"a":1e308}`} {
		f.Add(s)
	}
	c := New([]polyloop.ToolSpec{{Name: "get_weather", Parameters: json.RawMessage(weather)}})
	f.Fuzz(func(t *testing.T, args string) {
		if !json.Valid([]byte(args)) {
			return
		}
		fb, ok := c.Check("get_weather", json.RawMessage(args))
		again, ok2 := c.Check("get_weather", json.RawMessage(args))
		if fb != again || ok != ok2 {
			t.Fatalf("not deterministic: %q %v then %q %v", fb, ok, again, ok2)
		}
		if ok != (fb == "") {
			t.Fatalf("ok %v with feedback %q", ok, fb)
		}
		var v any
		if !ok && (json.Unmarshal([]byte(args), &v) != nil || c.tools["get_weather"].whole.Validate(v) == nil) {
			t.Fatalf("refused %s, which the validator accepts", args)
		}
	})
}
