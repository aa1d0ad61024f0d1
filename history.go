package polyloop

// History rebuilds, from a run log, the messages the model sees for its next
// call: the system prompt; the task as the user's message; then, for each
// completed step, the assistant reply (text and tool calls) followed by the
// step's observation as the tool result for its call id — or, for an Invalid
// decision, the feedback as a user message. Orphaned intents and unfinished
// steps contribute nothing. The same log always yields the same history,
// byte for byte, whether or not the run was resumed.
func History(log RunLog) []Message {
	var h historyBuilder
	for _, r := range log.Records {
		h.add(r.Body)
	}
	return h.msgs
}

type historyBuilder struct {
	msgs  []Message
	reply *ModelReply // reply of the step in progress
	call  string      // tool-call id of the step's action
}

func (h *historyBuilder) start(s Snapshot) {
	h.msgs = h.msgs[:0]
	if s.System != "" {
		h.msgs = append(h.msgs, Message{Role: RoleSystem, Content: s.System})
	}
	h.msgs = append(h.msgs, Message{Role: RoleUser, Content: s.Task.Input})
}

func (h *historyBuilder) add(b RecordBody) {
	switch b := b.(type) {
	case *RunStarted:
		h.start(b.Snapshot)
	case *ConfigOverride:
		h.setSystem(b.Snapshot.System)
	case *ModelCallResult:
		h.reply, h.call = b.Reply, ""
	case *ActionIntent:
		h.call = b.Action.CallID
	case *StepCompleted:
		h.completeStep(b)
	}
}

func (h *historyBuilder) completeStep(b *StepCompleted) {
	if h.reply != nil {
		h.msgs = append(h.msgs, Message{Role: RoleAssistant, Content: h.reply.Text, ToolCalls: h.reply.ToolCalls})
	}
	switch b.Decision {
	case DecisionInvalid:
		h.msgs = append(h.msgs, Message{Role: RoleUser, Content: b.Feedback, Feedback: true})
	case DecisionAct:
		h.msgs = append(h.msgs, Message{Role: RoleTool, Content: b.Observation, ToolCallID: h.call, Synthetic: b.Synthetic})
	}
	h.reply, h.call = nil, ""
}

// setSystem puts the system prompt of an overriding snapshot in force: the
// model sees the new prompt from the next call on.
func (h *historyBuilder) setSystem(system string) {
	hasSystem := len(h.msgs) > 0 && h.msgs[0].Role == RoleSystem
	switch {
	case hasSystem && system != "":
		h.msgs[0].Content = system
	case hasSystem:
		h.msgs = append(h.msgs[:0], h.msgs[1:]...)
	case system != "":
		h.msgs = append([]Message{{Role: RoleSystem, Content: system}}, h.msgs...)
	}
}
