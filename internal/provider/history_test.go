package provider

import (
	"reflect"
	"testing"

	"github.com/polyloop/polyloop"
)

func TestPairToolResults(t *testing.T) {
	t.Parallel()
	const u = "unanswered"
	user := func(s string) polyloop.Message { return polyloop.Message{Role: polyloop.RoleUser, Content: s} }
	asst := func(ids ...string) polyloop.Message {
		m := polyloop.Message{Role: polyloop.RoleAssistant}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, polyloop.ToolCall{ID: id, Name: "t"})
		}
		return m
	}
	tool := func(id, s string) polyloop.Message {
		return polyloop.Message{Role: polyloop.RoleTool, ToolCallID: id, Content: s}
	}
	synth := func(id string) polyloop.Message {
		return polyloop.Message{Role: polyloop.RoleTool, ToolCallID: id, Content: u, Synthetic: true}
	}
	for _, tc := range []struct {
		name    string
		in, out []polyloop.Message
	}{
		{"no tools", []polyloop.Message{user("a"), asst(), user("b")}, []polyloop.Message{user("a"), asst(), user("b")}},
		{"answered", []polyloop.Message{user("a"), asst("1"), tool("1", "r")}, []polyloop.Message{user("a"), asst("1"), tool("1", "r")}},
		{"invalid step with two calls", []polyloop.Message{asst("1", "2"), user("one call per turn")},
			[]polyloop.Message{asst("1", "2"), synth("1"), synth("2"), user("one call per turn")}},
		{"second call answered, results in call order", []polyloop.Message{asst("1", "2"), tool("2", "r")},
			[]polyloop.Message{asst("1", "2"), synth("1"), tool("2", "r")}},
		{"observation without id", []polyloop.Message{asst("1"), tool("", "obs")},
			[]polyloop.Message{asst("1"), synth("1"), tool("", "obs")}},
		{"answer to an unknown id", []polyloop.Message{asst("1"), tool("9", "obs")},
			[]polyloop.Message{asst("1"), synth("1"), tool("", "obs")}},
		{"double answer", []polyloop.Message{asst("1"), tool("1", "a"), tool("1", "b")},
			[]polyloop.Message{asst("1"), tool("1", "a"), tool("", "b")}},
		{"tool message before any call", []polyloop.Message{tool("1", "x"), asst()},
			[]polyloop.Message{tool("", "x"), asst()}},
		{"batch answered in order", []polyloop.Message{asst("1", "2", "3"), tool("1", "a"), tool("2", "b"), tool("3", "c"), asst()},
			[]polyloop.Message{asst("1", "2", "3"), tool("1", "a"), tool("2", "b"), tool("3", "c"), asst()}},
		{"batch answered out of order, sent in call order", []polyloop.Message{asst("1", "2"), tool("2", "b"), tool("1", "a")},
			[]polyloop.Message{asst("1", "2"), tool("1", "a"), tool("2", "b")}},
		{"two batches in a row", []polyloop.Message{asst("1", "2"), tool("1", "a"), tool("2", "b"), asst("3", "4"), tool("3", "c"), tool("4", "d")},
			[]polyloop.Message{asst("1", "2"), tool("1", "a"), tool("2", "b"), asst("3", "4"), tool("3", "c"), tool("4", "d")}},
		{"an answer to the previous batch after the next one", []polyloop.Message{asst("1"), asst("2"), tool("1", "late"), tool("2", "b")},
			[]polyloop.Message{asst("1"), synth("1"), asst("2"), tool("2", "b"), tool("", "late")}},
		{"unanswered at the end", []polyloop.Message{user("a"), asst("1")}, []polyloop.Message{user("a"), asst("1"), synth("1")}},
	} {
		in := append([]polyloop.Message(nil), tc.in...)
		got := PairToolResults(tc.in, u)
		if !reflect.DeepEqual(got, tc.out) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.out)
		}
		if !reflect.DeepEqual(in, tc.in) {
			t.Errorf("%s: the input was modified", tc.name)
		}
	}
}
