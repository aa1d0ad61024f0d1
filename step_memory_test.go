package polyloop

import (
	"encoding/json"
	"testing"
)

// The mirror of the history with the view's message equals the history
// with the message inserted, through growth, a changed system prompt, a
// removed one, a history started again, and an empty rendering.
func TestViewHistoryMirror(t *testing.T) {
	var h viewHistory
	msg := func(r Role, c string) Message { return Message{Role: r, Content: c} }
	hist := []Message{msg(RoleSystem, "sys"), msg(RoleUser, "task")}
	check := func(step string, msgs []Message, text string) {
		t.Helper()
		got, _ := json.Marshal(h.with(msgs, text))
		want, _ := json.Marshal(withView(nil, msgs, text))
		if string(got) != string(want) {
			t.Fatalf("%s:\n got %s\nwant %s", step, got, want)
		}
	}
	check("start", hist, "v1")
	hist = append(hist, msg(RoleAssistant, "a1"), msg(RoleTool, "o1"))
	check("grown", hist, "v2")
	check("same", hist, "v2")
	hist[0].Content = "new sys"
	check("system changed", hist, "v2")
	hist = hist[1:]
	check("system removed", hist, "v3")
	hist = append(hist, msg(RoleAssistant, "a2"))
	check("grown without system", hist, "v3")
	hist = []Message{msg(RoleSystem, "sys"), msg(RoleUser, "again")}
	check("started again", hist, "v4")
	if got := h.with(hist, "  \n"); len(got) != len(hist) {
		t.Fatalf("an empty rendering added a message: %v", got)
	}
}
