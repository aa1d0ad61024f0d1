package polyloop

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

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

// action is the action the tool call is; it shares the call's arguments.
func (c ToolCall) action() Action { return Action{CallID: c.ID, Tool: c.Name, Args: c.Args} }

// restored is the action the tool call is, with arguments of its own: the
// action of an intent that leaves it out, as it reads back.
func (c ToolCall) restored() Action {
	a := c.action()
	a.Args = slices.Clone(c.Args)
	return a
}

// leavesOutAction reports whether body is an action intent that refers to
// a tool call and leaves its action out: the records of version 2.
func leavesOutAction(body RecordBody) bool {
	in, ok := body.(*ActionIntent)
	return ok && in.ToolCall > 0 && in.Action.empty()
}

// ErrToolCallMismatch is what an Append (AppendRecords, the Runner's
// writes) returns, wrapped, before anything is written, for an action
// intent appended with the model result it refers to
// (ActionIntent.ToolCall) whose action is neither empty nor that tool call.
var ErrToolCallMismatch = errors.New("polyloop: action_intent's action is not the tool call it refers to")

// referToToolCall reports whether r, appended after the records before of
// its batch, is an action intent the log writes as a reference to its tool
// call (ActionIntent.ToolCall), leaving its action out: when the batch
// holds the model result it refers to, whose tool call the action must be
// (an error otherwise: it is never replaced by the call), or when the
// action is empty (the reader takes it from the log). Otherwise the action
// is written as it is.
func referToToolCall(before []Record, r Record) (bool, error) {
	in, ok := r.Body.(*ActionIntent)
	if !ok || in.ToolCall <= 0 {
		return false, nil
	}
	for i := len(before) - 1; i >= 0; i-- {
		res, ok := before[i].Body.(*ModelCallResult)
		if !ok {
			continue
		}
		if res.CallID != in.ModelCallID || res.Step != in.Step {
			break
		}
		if res.Reply == nil || in.ToolCall > len(res.Reply.ToolCalls) {
			return false, fmt.Errorf("action_intent %q refers to tool call %d of model result %q, which does not have it", in.ActionID, in.ToolCall, in.ModelCallID)
		}
		if !in.Action.empty() && !in.Action.Equal(res.Reply.ToolCalls[in.ToolCall-1].action()) {
			return false, fmt.Errorf("%w: %q, tool call %d of model result %q", ErrToolCallMismatch, in.ActionID, in.ToolCall, in.ModelCallID)
		}
		return true, nil
	}
	return in.Action.empty(), nil
}

// empty reports whether the action is left out, as the log leaves out an
// action that is a tool call.
func (a Action) empty() bool {
	return a.CallID == "" && a.Tool == "" && len(a.Args) == 0 && a.Code == "" && a.Lang == ""
}

// resolveToolCall returns r with its action when r is an action intent that
// refers to a tool call (ActionIntent.ToolCall) without its action, as the
// log keeps it: the action is taken from the model result with its
// ModelCallID, the last model result of log, the records before r. Any
// other record, and an intent log does not resolve, is returned as it is
// (the fold says what is wrong with the latter). r's body is not modified.
func resolveToolCall(log []Record, r Record) Record {
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
			c.Action = res.Reply.ToolCalls[in.ToolCall-1].restored()
			r.Body = &c
		}
		break
	}
	return r
}

// refersToToolCalls reports whether the run's action intents refer to their
// tool calls (ActionIntent.ToolCall): in a run started with log format 1.2
// or later. A run an older library started keeps its actions in its
// intents, so that such a library can still continue it.
func (st *logState) refersToToolCalls() bool { return st.refsToolCalls }

// atLeastMinor reports whether the log format version v ("1.2"; "" is
// "1.0") is 1.minor or later.
func atLeastMinor(v string, minor int) bool {
	major, m, ok := strings.Cut(v, ".")
	if !ok {
		return false
	}
	maj, err1 := strconv.Atoi(major)
	n, err2 := strconv.Atoi(m)
	if err1 != nil || err2 != nil {
		return false
	}
	return maj > LogVersion || (maj == LogVersion && n >= minor)
}
