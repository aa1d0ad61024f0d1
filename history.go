package polyloop

// History rebuilds, from a run log, the messages the model sees for its next
// call: the system prompt; the task as the user's message; then, for each
// completed step, the assistant reply (text and tool calls) followed by the
// observation of each action of its batch, in the batch's order, as the tool
// result for its call id — or, for an Invalid decision, the feedback as a
// user message. Orphaned intents and unfinished steps contribute nothing.
// The same log always yields the same history, byte for byte, whether or not
// the run was resumed. A log that breaks the grammar yields the history of
// the records before the break.
func History(log RunLog) []Message { return foldPrefix(log).hist.msgs }

type historyBuilder struct {
	msgs []Message
}

func (h *historyBuilder) start(s Snapshot) {
	h.msgs = h.msgs[:0]
	if s.System != "" {
		h.msgs = append(h.msgs, Message{Role: RoleSystem, Content: s.System})
	}
	h.msgs = append(h.msgs, Message{Role: RoleUser, Content: s.Task.Input})
}

// completeStep adds a completed step: the reply, then the feedback of an
// Invalid decision or the observations of the batch.
func (h *historyBuilder) completeStep(reply *ModelReply, b *StepCompleted, batch []batchAction) {
	if reply != nil {
		h.msgs = append(h.msgs, Message{Role: RoleAssistant, Content: reply.Text, ToolCalls: reply.ToolCalls})
	}
	switch b.Decision {
	case DecisionInvalid:
		h.msgs = append(h.msgs, Message{Role: RoleUser, Content: b.Feedback, Feedback: true})
	case DecisionAct:
		for _, a := range batch {
			h.msgs = append(h.msgs, Message{Role: RoleTool, Content: a.settled.Observation,
				ToolCallID: a.action().CallID, Synthetic: a.settled.Synthetic})
		}
	}
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
