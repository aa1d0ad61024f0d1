package polyloop

import (
	"encoding/json"

	"github.com/polyloop/polyloop/diag"
)

// The fields of the bodies for decodeStep. Each reads the value of its key
// and reports false for an unknown or repeated key.

func (b *ModelCallIntent) field(d *decoder, key []byte) bool {
	var ok bool
	switch string(key) {
	case "step":
		b.Step, ok = intOnce(d, 0)
	case "call_id":
		b.CallID, ok = stringOnce(d, 1)
	case "attempt":
		b.Attempt, ok = intOnce(d, 2)
	case "view":
		if !d.once(3) {
			return false
		}
		v := &ViewRef{}
		b.View, ok = v, d.object(false, v.field)
	}
	return ok
}

func (v *ViewRef) field(d *decoder, key []byte) bool {
	var ok bool
	switch string(key) {
	case "name":
		v.Name, ok = stringOnce(d, 0)
	case "version":
		if ok = d.once(1); ok {
			v.Version, ok = d.int64()
		}
	}
	return ok
}

func (b *ModelCallResult) field(d *decoder, key []byte) bool {
	var ok bool
	switch string(key) {
	case "step":
		b.Step, ok = intOnce(d, 0)
	case "call_id":
		b.CallID, ok = stringOnce(d, 1)
	case "attempt":
		b.Attempt, ok = intOnce(d, 2)
	case "reply":
		if !d.once(3) {
			return false
		}
		r := &ModelReply{}
		b.Reply, ok = r, d.object(false, r.field)
	case "failure":
		if !d.once(4) {
			return false
		}
		f := &diag.Diagnostic{}
		b.Failure, ok = f, d.diagnostic(f, 0)
	case "usage":
		if !d.once(5) {
			return false
		}
		u := &Usage{}
		b.Usage, ok = u, d.object(false, u.field)
	}
	return ok
}

func (r *ModelReply) field(d *decoder, key []byte) bool {
	var ok bool
	switch string(key) {
	case "text":
		r.Text, ok = stringOnce(d, 0)
	case "tool_calls":
		if !d.once(1) {
			return false
		}
		r.ToolCalls, ok = d.toolCalls()
	case "usage":
		ok = d.once(2) && d.object(false, r.Usage.field)
	case "model":
		r.Model, ok = stringOnce(d, 3)
	case "finish_reason":
		r.FinishReason, ok = knownOnce(d, 4, "stop", "tool_calls", "end_turn", "tool_use", "length", "max_tokens")
	case "attempts":
		r.Attempts, ok = intOnce(d, 5)
	case "request_id":
		r.RequestID, ok = stringOnce(d, 6)
	}
	return ok
}

func (d *decoder) toolCalls() ([]ToolCall, bool) {
	if !d.literal("[") {
		return nil, false
	}
	calls := []ToolCall{}
	for {
		d.space()
		if d.literal("]") {
			return calls, true
		}
		if len(calls) > 0 && !d.literal(",") {
			return nil, false
		}
		calls = append(calls, ToolCall{})
		if !d.object(false, calls[len(calls)-1].field) {
			return nil, false
		}
	}
}

func (tc *ToolCall) field(d *decoder, key []byte) bool {
	var ok bool
	switch string(key) {
	case "id":
		tc.ID, ok = stringOnce(d, 0)
	case "name":
		tc.Name, ok = stringOnce(d, 1)
	case "args":
		tc.Args, ok = rawOnce(d, 2)
	}
	return ok
}

func (u *Usage) field(d *decoder, key []byte) bool {
	var ok bool
	switch string(key) {
	case "input_tokens":
		u.InputTokens, ok = int64Once(d, 0)
	case "output_tokens":
		u.OutputTokens, ok = int64Once(d, 1)
	case "cached_tokens":
		u.CachedTokens, ok = int64Once(d, 2)
	case "reasoning_tokens":
		u.ReasoningTokens, ok = int64Once(d, 3)
	case "cost_usd":
		if !d.once(4) {
			return false
		}
		var f float64
		f, ok = d.float()
		u.CostUSD = &f
	case "tokens_unknown":
		u.TokensUnknown, ok = boolOnce(d, 5)
	}
	return ok
}

// diagnostic reads a diagnostic whose causes nest depth levels above the
// record's; deeper than a record may nest, it leaves the text to the
// generic decoder, which refuses it.
func (d *decoder) diagnostic(g *diag.Diagnostic, depth int) bool {
	if depth > MaxRecordDepth {
		return false
	}
	return d.object(false, func(d *decoder, key []byte) bool {
		var ok bool
		switch string(key) {
		case "type":
			g.Type, ok = stringOnce(d, 0)
		case "message":
			g.Message, ok = stringOnce(d, 1)
		case "fields":
			if !d.once(2) {
				return false
			}
			g.Fields = map[string]string{}
			ok = d.object(false, func(d *decoder, key []byte) bool {
				if _, dup := g.Fields[string(key)]; dup {
					return false
				}
				v, ok := d.string()
				g.Fields[string(key)] = v
				return ok
			})
		case "causes":
			if !d.once(3) || !d.literal("[") {
				return false
			}
			g.Causes = []diag.Diagnostic{}
			for {
				d.space()
				if d.literal("]") {
					return true
				}
				if len(g.Causes) > 0 && !d.literal(",") {
					return false
				}
				g.Causes = append(g.Causes, diag.Diagnostic{})
				if !d.diagnostic(&g.Causes[len(g.Causes)-1], depth+1) {
					return false
				}
			}
		case "truncated":
			g.Truncated, ok = boolOnce(d, 4)
		}
		return ok
	})
}

func (b *ActionIntent) field(d *decoder, key []byte) bool {
	var ok bool
	switch string(key) {
	case "step":
		b.Step, ok = intOnce(d, 0)
	case "action_id":
		b.ActionID, ok = stringOnce(d, 1)
	case "attempt":
		b.Attempt, ok = intOnce(d, 2)
	case "model_call_id":
		b.ModelCallID, ok = stringOnce(d, 3)
	case "action":
		ok = d.once(4) && d.object(false, b.Action.field)
	case "replay":
		var s string
		s, ok = knownOnce(d, 5, string(ReplaySafe), string(NeverReplay), string(ReplayIdempotent), string(RestoreAndReplay))
		b.Replay = ReplayPolicy(s)
	case "env_snapshot":
		var s string
		s, ok = stringOnce(d, 9)
		b.EnvSnapshot = EnvSnapshot(s)
	case "index":
		b.Index, ok = intOnce(d, 6)
	case "of":
		b.Of, ok = intOnce(d, 7)
	case "tool_call":
		b.ToolCall, ok = intOnce(d, 8)
	case "idempotency_key":
		b.IdempotencyKey, ok = stringOnce(d, 10)
	}
	return ok
}

func (a *Action) field(d *decoder, key []byte) bool {
	var ok bool
	switch string(key) {
	case "call_id":
		a.CallID, ok = stringOnce(d, 0)
	case "tool":
		a.Tool, ok = stringOnce(d, 1)
	case "args":
		a.Args, ok = rawOnce(d, 2)
	case "code":
		a.Code, ok = stringOnce(d, 3)
	case "lang":
		a.Lang, ok = stringOnce(d, 4)
	}
	return ok
}

func (b *StepCompleted) field(d *decoder, key []byte) bool {
	var ok bool
	switch string(key) {
	case "step":
		b.Step, ok = intOnce(d, 0)
	case "model_call_id":
		b.ModelCallID, ok = stringOnce(d, 1)
	case "decision":
		var s string
		s, ok = knownOnce(d, 2, string(DecisionAct), string(DecisionFinal), string(DecisionInvalid))
		b.Decision = DecisionKind(s)
	case "feedback":
		b.Feedback, ok = stringOnce(d, 3)
	case "answer":
		b.Answer, ok = stringOnce(d, 4)
	default:
		return b.SettledAction.field(d, key)
	}
	return ok
}

func (b *ActionResult) field(d *decoder, key []byte) bool {
	if string(key) == "step" {
		var ok bool
		b.Step, ok = intOnce(d, 0)
		return ok
	}
	return b.SettledAction.field(d, key)
}

// field reads a settlement's fields; their bits start at 8, above those
// of the records that hold one.
func (s *SettledAction) field(d *decoder, key []byte) bool {
	var ok bool
	switch string(key) {
	case "result_id":
		s.ResultID, ok = stringOnce(d, 8)
	case "attempt":
		s.Attempt, ok = intOnce(d, 9)
	case "outcome":
		if !d.once(10) {
			return false
		}
		o := &StepOutcome{}
		s.Outcome, ok = o, d.object(false, o.field)
	case "observation":
		s.Observation, ok = stringOnce(d, 11)
	case "synthetic":
		s.Synthetic, ok = boolOnce(d, 12)
	case "truncated_chars":
		s.TruncatedChars, ok = intOnce(d, 13)
	case "audit":
		s.Audit, ok = stringOnce(d, 14)
	case "env_snapshot":
		var v string
		v, ok = stringOnce(d, 15)
		s.EnvSnapshot = EnvSnapshot(v)
	}
	return ok
}

func (o *StepOutcome) field(d *decoder, key []byte) bool {
	var ok bool
	switch string(key) {
	case "status":
		var s string
		s, ok = knownOnce(d, 0, string(Executed), string(NotExecuted), string(EnvError))
		o.Status = ActionStatus(s)
	case "done":
		o.Done, ok = boolOnce(d, 1)
	case "executor_truncated":
		o.ExecutorTruncated, ok = intOnce(d, 2)
	}
	return ok
}

func intOnce(d *decoder, n uint) (int, bool) {
	if !d.once(n) {
		return 0, false
	}
	return d.int()
}

func int64Once(d *decoder, n uint) (int64, bool) {
	if !d.once(n) {
		return 0, false
	}
	return d.int64()
}

func stringOnce(d *decoder, n uint) (string, bool) {
	if !d.once(n) {
		return "", false
	}
	return d.string()
}

// knownOnce is stringOnce for a field whose values are mostly one of
// known: those are returned without a copy.
func knownOnce(d *decoder, n uint, known ...string) (string, bool) {
	if !d.once(n) {
		return "", false
	}
	b, ok := d.text()
	for _, k := range known {
		if string(b) == k {
			return k, ok
		}
	}
	return string(b), ok
}

func boolOnce(d *decoder, n uint) (bool, bool) {
	if !d.once(n) {
		return false, false
	}
	return d.bool()
}

func rawOnce(d *decoder, n uint) (json.RawMessage, bool) {
	if !d.once(n) {
		return nil, false
	}
	return d.raw()
}
