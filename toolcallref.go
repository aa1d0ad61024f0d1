package polyloop

// FromToolCall is the ActionIntent.ToolCall of an action that is one of
// calls, the tool calls of its model reply: the position of the first call
// with its call id, tool and arguments, or 0 for a code action, an action
// without a call id, and one that none of calls is.
func FromToolCall(a Action, calls []ToolCall) int {
	if a.CallID == "" || a.IsCode() || a.Code != "" || a.Lang != "" {
		return 0
	}
	for i := range calls {
		if c := &calls[i]; c.ID == a.CallID && c.Name == a.Tool && string(c.Args) == string(a.Args) {
			return i + 1
		}
	}
	return 0
}

// action is the action the tool call is.
func (c ToolCall) action() Action { return Action{CallID: c.ID, Tool: c.Name, Args: c.Args} }

// empty reports whether the action is left out, as the log leaves out an
// action that is a tool call.
func (a Action) empty() bool {
	return a.CallID == "" && a.Tool == "" && len(a.Args) == 0 && a.Code == "" && a.Lang == ""
}

// ResolveToolCall returns r with its action when r is an action intent that
// refers to a tool call (ActionIntent.ToolCall) without its action, as the
// log keeps it: the action is taken from the model result with its
// ModelCallID, the last model result of log, the records before r. Any
// other record, and an intent log does not resolve, is returned as it is
// (the fold says what is wrong with the latter). r's body is not modified.
func ResolveToolCall(log []Record, r Record) Record {
	in, ok := r.Body.(*ActionIntent)
	if !ok || in.ToolCall <= 0 || !in.Action.empty() {
		return r
	}
	for i := len(log) - 1; i >= 0; i-- {
		res, ok := log[i].Body.(*ModelCallResult)
		if !ok {
			continue
		}
		if res.CallID == in.ModelCallID && res.Step == in.Step && res.Reply != nil && in.ToolCall <= len(res.Reply.ToolCalls) {
			c := *in
			c.Action = res.Reply.ToolCalls[in.ToolCall-1].action()
			r.Body = &c
		}
		break
	}
	return r
}
