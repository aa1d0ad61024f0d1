package provider

import "github.com/polyloop/polyloop"

// PairToolResults returns the history rewritten so that every assistant
// message with tool calls is followed at once by exactly one tool message
// per call, in the order of the calls: the history's own result for that id
// when there is one (the first, if several), else a synthesized result with
// the text unanswered. The other messages up to the next assistant message
// follow in their order; a tool message among them — no id, an id that
// answers no call, a second answer — loses its ToolCallID and is sent as a
// user message. The input is not modified.
func PairToolResults(msgs []polyloop.Message, unanswered string) []polyloop.Message {
	out := make([]polyloop.Message, 0, len(msgs)+2)
	for i := 0; i < len(msgs); {
		m := msgs[i]
		if m.Role != polyloop.RoleAssistant || len(m.ToolCalls) == 0 {
			out = append(out, detached(m))
			i++
			continue
		}
		end := i + 1
		for end < len(msgs) && msgs[end].Role != polyloop.RoleAssistant {
			end++
		}
		out = appendWindow(out, m, msgs[i+1:end], unanswered)
		i = end
	}
	return out
}

// appendWindow appends an assistant message with tool calls, one result per
// call, and the rest of the messages that followed it.
func appendWindow(out []polyloop.Message, asst polyloop.Message, window []polyloop.Message, unanswered string) []polyloop.Message {
	out = append(out, asst)
	used := make([]bool, len(window))
	for _, tc := range asst.ToolCalls {
		j := answerOf(window, used, tc.ID)
		if j < 0 {
			out = append(out, polyloop.Message{Role: polyloop.RoleTool, ToolCallID: tc.ID, Content: unanswered, Synthetic: true})
			continue
		}
		used[j] = true
		out = append(out, window[j])
	}
	for j, w := range window {
		if !used[j] {
			out = append(out, detached(w))
		}
	}
	return out
}

// answerOf is the index of the first unused tool message answering id, or -1.
func answerOf(window []polyloop.Message, used []bool, id string) int {
	if id == "" {
		return -1
	}
	for j, w := range window {
		if !used[j] && w.Role == polyloop.RoleTool && w.ToolCallID == id {
			return j
		}
	}
	return -1
}

// detached is m without a tool-call id: a tool message that answers no
// pending call is sent as a user message.
func detached(m polyloop.Message) polyloop.Message {
	if m.Role == polyloop.RoleTool {
		m.ToolCallID = ""
	}
	return m
}
