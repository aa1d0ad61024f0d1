package polyloop_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/polyloop/polyloop"
)

func TestModelReplyClone(t *testing.T) {
	cost := 0.5
	r := polyloop.ModelReply{Text: "t", ToolCalls: []polyloop.ToolCall{{ID: "c", Name: "n", Args: json.RawMessage(`{"a":1}`)}},
		Usage: polyloop.Usage{CostUSD: &cost}}
	c := r.Clone()
	if !reflect.DeepEqual(c, r) {
		t.Fatal("clone differs")
	}
	c.ToolCalls[0].Args[2] = 'b'
	*c.Usage.CostUSD = 9
	c.ToolCalls[0].Name = "x"
	if string(r.ToolCalls[0].Args) != `{"a":1}` || *r.Usage.CostUSD != 0.5 || r.ToolCalls[0].Name != "n" {
		t.Fatal("the clone shares memory with the original")
	}
	for _, calls := range [][]polyloop.ToolCall{nil, {}} {
		if got := (polyloop.ModelReply{ToolCalls: calls}).Clone(); !reflect.DeepEqual(got.ToolCalls, calls) {
			t.Fatalf("Clone turned %#v into %#v", calls, got.ToolCalls)
		}
	}
}
