package polylooptest

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/polyloop/polyloop"
)

// checkDeltas checks a call's deltas in the order they came: their form,
// and that every attempt that delivered deltas and was followed by another
// was superseded first. It returns the deltas of the last attempt when it
// was not superseded (the candidate for the reply), and how many attempts
// delivered deltas.
func checkDeltas(deltas []polyloop.Delta) (accepted []polyloop.Delta, attempts int, err error) {
	current := 0  // the attempt of the deltas so far
	open := false // current delivered deltas and was not superseded
	superseded := map[int]bool{}
	for i, d := range deltas {
		if err := deltaForm(i, d, current, superseded); err != nil {
			return nil, attempts, err
		}
		if d.Superseded {
			superseded[d.Attempt] = true
			if d.Attempt == current {
				open, accepted = false, nil
			}
			continue
		}
		if d.Attempt != current {
			if open {
				return nil, attempts, broke(ruleSupersedeBeforeNew, "delta %d is of attempt %d, but attempt %d delivered deltas and was never superseded: its text would be glued to the next attempt's", i, d.Attempt, current)
			}
			current, accepted = d.Attempt, nil
			attempts++
		}
		open = true
		accepted = append(accepted, d)
	}
	return accepted, attempts, nil
}

// deltaForm checks one delta against the attempt of the deltas before it.
func deltaForm(i int, d polyloop.Delta, current int, superseded map[int]bool) error {
	switch {
	case d.Attempt < 1:
		return broke(ruleDeltaForm, "delta %d names attempt %d; attempts are numbered from 1", i, d.Attempt)
	case d.Attempt < current:
		return broke(ruleDeltaForm, "delta %d is of attempt %d, after deltas of attempt %d", i, d.Attempt, current)
	case d.Superseded && (d.Text != "" || d.Args != "" || d.ToolCallID != "" || d.ToolName != "" || d.ToolCall != 0):
		return broke(ruleDeltaForm, "delta %d supersedes attempt %d but carries content %s", i, d.Attempt, cutJSON(d))
	case !d.Superseded && superseded[d.Attempt]:
		return broke(ruleDeltaForm, "delta %d is of attempt %d, which was already superseded", i, d.Attempt)
	}
	return nil
}

// concatenates checks that the accepted attempt's deltas make the reply:
// their texts its text, and per tool call their arguments that call's
// arguments, with the call's id and tool name where a delta names them.
func concatenates(accepted []polyloop.Delta, reply polyloop.ModelReply) error {
	var text strings.Builder
	args := map[int]*strings.Builder{}
	var errs []error
	for _, d := range accepted {
		text.WriteString(d.Text)
		if d.ToolCallID == "" && d.ToolName == "" && d.Args == "" {
			continue
		}
		if d.ToolCall < 0 || d.ToolCall >= len(reply.ToolCalls) {
			errs = append(errs, broke(ruleDeltasConcatenate, "a delta is of tool call %d, but the reply has %d tool calls", d.ToolCall, len(reply.ToolCalls)))
			continue
		}
		tc := reply.ToolCalls[d.ToolCall]
		if (d.ToolCallID != "" && d.ToolCallID != tc.ID) || (d.ToolName != "" && d.ToolName != tc.Name) {
			errs = append(errs, broke(ruleDeltasConcatenate, "a delta of tool call %d names id %q and tool %q; the reply's call is %q, %q", d.ToolCall, d.ToolCallID, d.ToolName, tc.ID, tc.Name))
		}
		if args[d.ToolCall] == nil {
			args[d.ToolCall] = &strings.Builder{}
		}
		args[d.ToolCall].WriteString(d.Args)
	}
	if text.String() != reply.Text {
		errs = append(errs, broke(ruleDeltasConcatenate, "the deltas' texts make %q; the reply's text is %q", cutText(text.String()), cutText(reply.Text)))
	}
	for i, tc := range reply.ToolCalls {
		var streamed string
		if b := args[i]; b != nil {
			streamed = b.String()
		}
		if !argsMatch(streamed, tc.Args) {
			errs = append(errs, broke(ruleDeltasConcatenate, "the deltas of tool call %d (%s) make arguments %q; the reply's are %s", i, tc.Name, cutText(streamed), cut(tc.Args)))
		}
	}
	return errors.Join(errs...)
}

// argsMatch reports whether streamed, the arguments as the client received
// them, are the reply's args: the same JSON value, or — for arguments that
// are not JSON, which a reply keeps as a JSON string — that string.
func argsMatch(streamed string, args json.RawMessage) bool {
	if streamed == "" {
		return len(args) == 0
	}
	if !json.Valid([]byte(streamed)) {
		var s string
		return json.Unmarshal(args, &s) == nil && s == streamed
	}
	a, errA := canonical([]byte(streamed))
	b, errB := canonical(args)
	return errA == nil && errB == nil && a == b
}

// canonical is a JSON value re-encoded with sorted keys and no escaping of
// HTML characters, so that equal values compare equal.
func canonical(raw []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return buf.String(), nil
}

func cutText(s string) string { return cut([]byte(s)) }

// CheckDeltas reports how the deltas one call of Stream delivered, in the
// order they came, break the StreamingModelClient contract given the reply
// that call returned: their form, the superseded rule, and that the
// accepted attempt's deltas concatenate to the reply. Each failure names
// the rule it breaks. TestStreamingModelClient applies it; an adapter's
// own tests can apply it to each of their fixtures.
func CheckDeltas(deltas []polyloop.Delta, reply polyloop.ModelReply) error {
	accepted, _, err := checkDeltas(deltas)
	if err != nil {
		return err
	}
	return concatenates(accepted, reply)
}
