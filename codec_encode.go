package polyloop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/polyloop/polyloop/diag"
)

// appendRecord appends the JSON encoding of r to dst: one flat object, the
// envelope fields "seq", "at", "kind" and "v", then the body's fields in
// their declaration order. The bytes are those encoding/json writes for the
// body with HTML escaping off (TestRecordEncoderMatchesReflection holds it
// to that, but for an action intent's action that is a tool call, which
// it leaves out): the records of a step are encoded here without reflection, the
// others (run_started, run_finished, gates, maintenance: a few per run)
// through encoding/json. On error dst is returned unchanged with the error
// encoding/json gives. ref says an action intent leaves its action out for
// the tool call it refers to (referToToolCall): its "v" is then 2.
func appendRecord(dst []byte, r Record, ref bool) ([]byte, error) {
	if r.Body == nil {
		return dst, fmt.Errorf("polyloop: record %d has no body", r.Seq)
	}
	at := r.At.UTC()
	if y := at.Year(); y < 0 || y > 9999 {
		// RFC 3339 has four-digit years: say it as encoding/json does.
		_, err := json.Marshal(at)
		return dst, err
	}
	start := len(dst)
	version := int64(1)
	if ref {
		version = 2
	}
	dst = appendEnvelope(dst, r, version)
	ok := true
	switch b := r.Body.(type) {
	case *ModelCallIntent:
		dst = appendModelCallIntent(dst, b)
	case *ModelCallResult:
		dst, ok = appendModelCallResult(dst, b)
	case *ActionIntent:
		dst, ok = appendActionIntent(dst, b, ref)
	case *StepCompleted:
		dst = appendStepCompleted(dst, b)
	case *ActionResult:
		dst = appendIntField(dst, "step", b.Step)
		dst = appendSettled(dst, &b.SettledAction)
	default:
		var err error
		if dst, err = appendReflected(dst, r.Body); err != nil {
			return dst[:start], err
		}
		return dst, nil
	}
	if !ok {
		// The body holds what encoding/json refuses (JSON text that is not
		// valid, a float that is not finite): say it with its words.
		_, err := appendReflected(dst[:start], r.Body)
		if err == nil {
			err = fmt.Errorf("polyloop: record %d (%s) does not encode", r.Seq, r.Kind())
		}
		return dst[:start], err
	}
	return append(dst, '}'), nil
}

// appendEnvelope appends the envelope of r, left open: "seq", "at" (in
// UTC; its year is checked by the caller), "kind" and "v".
func appendEnvelope(dst []byte, r Record, version int64) []byte {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendInt(dst, r.Seq, 10)
	dst = append(dst, `,"at":"`...)
	dst = r.At.UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","kind":"`...)
	dst = append(dst, r.Body.Kind()...)
	dst = append(dst, `","v":`...)
	return strconv.AppendInt(dst, version, 10)
}

// recordSizeHint is about the size of r's encoding: room for its envelope
// and fields, and its texts and JSON values as they are.
func recordSizeHint(r Record) int {
	n := 256
	switch b := r.Body.(type) {
	case *ModelCallIntent:
		n = 160
	case *ModelCallResult:
		n += 64
		if rep := b.Reply; rep != nil {
			n += len(rep.Text) + len(rep.Model) + len(rep.FinishReason) + len(rep.RequestID)
			for _, tc := range rep.ToolCalls {
				n += 32 + len(tc.ID) + len(tc.Name) + len(tc.Args)
			}
		}
		if b.Failure != nil {
			n += 256
		}
	case *ActionIntent:
		n += len(b.ActionID) + len(b.IdempotencyKey) + len(b.Action.CallID) + len(b.Action.Tool) + len(b.Action.Args) + len(b.Action.Code)
	case *StepCompleted:
		n += len(b.Feedback) + len(b.Answer) + len(b.Observation) + len(b.Audit)
	case *ActionResult:
		n += len(b.Observation) + len(b.Audit)
	default:
		n = 1024
	}
	return n
}

// appendReflected appends the fields of body, encoded by encoding/json, to
// an envelope left open, and closes it.
func appendReflected(dst []byte, body RecordBody) ([]byte, error) {
	var enc bytes.Buffer
	e := json.NewEncoder(&enc)
	e.SetEscapeHTML(false) // tool arguments and texts keep their bytes
	if err := e.Encode(body); err != nil {
		return dst, err
	}
	fields := bytes.TrimRight(enc.Bytes(), "\n")
	if len(fields) > 2 {
		dst = append(dst, ',')
		return append(dst, fields[1:]...), nil
	}
	return append(dst, '}'), nil
}

func appendModelCallIntent(dst []byte, b *ModelCallIntent) []byte {
	dst = appendIntField(dst, "step", b.Step)
	dst = appendStringField(dst, "call_id", b.CallID)
	dst = appendIntField(dst, "attempt", b.Attempt)
	if v := b.View; v != nil {
		dst = append(dst, `,"view":{"name":`...)
		dst = appendString(dst, v.Name)
		dst = append(dst, `,"version":`...)
		dst = strconv.AppendInt(dst, v.Version, 10)
		dst = append(dst, '}')
	}
	return dst
}

func appendModelCallResult(dst []byte, b *ModelCallResult) ([]byte, bool) {
	dst = appendIntField(dst, "step", b.Step)
	dst = appendStringField(dst, "call_id", b.CallID)
	dst = appendIntOmit(dst, "attempt", b.Attempt)
	ok := true
	if r := b.Reply; r != nil {
		dst = append(dst, `,"reply":`...)
		if dst, ok = appendReply(dst, r); !ok {
			return dst, false
		}
	}
	if f := b.Failure; f != nil {
		dst = append(dst, `,"failure":`...)
		dst = appendDiagnostic(dst, f)
	}
	if u := b.Usage; u != nil {
		dst = append(dst, `,"usage":`...)
		if dst, ok = appendUsage(dst, u); !ok {
			return dst, false
		}
	}
	return dst, true
}

func appendReply(dst []byte, r *ModelReply) ([]byte, bool) {
	dst = append(dst, '{')
	dst = appendStringOmit(dst, "text", r.Text)
	if len(r.ToolCalls) > 0 {
		dst = appendKey(dst, "tool_calls")
		dst = append(dst, '[')
		for i := range r.ToolCalls {
			if i > 0 {
				dst = append(dst, ',')
			}
			tc := &r.ToolCalls[i]
			dst = append(dst, '{')
			dst = appendStringOmit(dst, "id", tc.ID)
			dst = appendKey(dst, "name")
			dst = appendString(dst, tc.Name)
			var ok bool
			if dst, ok = appendRawOmit(dst, "args", tc.Args); !ok {
				return dst, false
			}
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	dst = appendKey(dst, "usage")
	var ok bool
	if dst, ok = appendUsage(dst, &r.Usage); !ok {
		return dst, false
	}
	dst = appendStringOmit(dst, "model", r.Model)
	dst = appendStringOmit(dst, "finish_reason", r.FinishReason)
	dst = appendIntOmit(dst, "attempts", r.Attempts)
	dst = appendStringOmit(dst, "request_id", r.RequestID)
	return append(dst, '}'), true
}

func appendUsage(dst []byte, u *Usage) ([]byte, bool) {
	dst = append(dst, '{')
	dst = appendInt64Omit(dst, "input_tokens", u.InputTokens)
	dst = appendInt64Omit(dst, "output_tokens", u.OutputTokens)
	dst = appendInt64Omit(dst, "cached_tokens", u.CachedTokens)
	dst = appendInt64Omit(dst, "reasoning_tokens", u.ReasoningTokens)
	if u.CostUSD != nil {
		dst = appendKey(dst, "cost_usd")
		var ok bool
		if dst, ok = appendFloat(dst, *u.CostUSD); !ok {
			return dst, false
		}
	}
	dst = appendBoolOmit(dst, "tokens_unknown", u.TokensUnknown)
	return append(dst, '}'), true
}

func appendDiagnostic(dst []byte, d *diag.Diagnostic) []byte {
	dst = append(dst, `{"type":`...)
	dst = appendString(dst, d.Type)
	dst = append(dst, `,"message":`...)
	dst = appendString(dst, d.Message)
	if len(d.Fields) > 0 {
		dst = append(dst, `,"fields":{`...)
		keys := make([]string, 0, len(d.Fields))
		for k := range d.Fields {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
			dst = append(dst, ':')
			dst = appendString(dst, d.Fields[k])
		}
		dst = append(dst, '}')
	}
	if len(d.Causes) > 0 {
		dst = append(dst, `,"causes":[`...)
		for i := range d.Causes {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendDiagnostic(dst, &d.Causes[i])
		}
		dst = append(dst, ']')
	}
	dst = appendBoolOmit(dst, "truncated", d.Truncated)
	return append(dst, '}')
}

func appendActionIntent(dst []byte, b *ActionIntent, ref bool) ([]byte, bool) {
	dst = appendIntField(dst, "step", b.Step)
	dst = appendStringField(dst, "action_id", b.ActionID)
	dst = appendIntField(dst, "attempt", b.Attempt)
	dst = appendStringField(dst, "model_call_id", b.ModelCallID)
	if !ref {
		dst = append(dst, `,"action":{`...)
		a := &b.Action
		dst = appendStringOmit(dst, "call_id", a.CallID)
		dst = appendStringOmit(dst, "tool", a.Tool)
		var ok bool
		if dst, ok = appendRawOmit(dst, "args", a.Args); !ok {
			return dst, false
		}
		dst = appendStringOmit(dst, "code", a.Code)
		dst = appendStringOmit(dst, "lang", a.Lang)
		dst = append(dst, '}')
	}
	dst = appendStringField(dst, "replay", string(b.Replay))
	dst = appendIntOmit(dst, "index", b.Index)
	dst = appendIntOmit(dst, "of", b.Of)
	dst = appendIntOmit(dst, "tool_call", b.ToolCall)
	dst = appendStringOmit(dst, "idempotency_key", b.IdempotencyKey)
	dst = appendStringOmit(dst, "env_snapshot", string(b.EnvSnapshot))
	return dst, true
}

func appendStepCompleted(dst []byte, b *StepCompleted) []byte {
	dst = appendIntField(dst, "step", b.Step)
	dst = appendStringField(dst, "model_call_id", b.ModelCallID)
	dst = appendStringField(dst, "decision", string(b.Decision))
	dst = appendStringOmit(dst, "feedback", b.Feedback)
	dst = appendStringOmit(dst, "answer", b.Answer)
	return appendSettled(dst, &b.SettledAction)
}

func appendSettled(dst []byte, s *SettledAction) []byte {
	dst = appendStringOmit(dst, "result_id", s.ResultID)
	dst = appendIntOmit(dst, "attempt", s.Attempt)
	if o := s.Outcome; o != nil {
		dst = append(dst, `,"outcome":{"status":`...)
		dst = appendString(dst, string(o.Status))
		dst = appendBoolOmit(dst, "done", o.Done)
		dst = appendIntOmit(dst, "executor_truncated", o.ExecutorTruncated)
		dst = append(dst, '}')
	}
	dst = appendStringOmit(dst, "observation", s.Observation)
	dst = appendBoolOmit(dst, "synthetic", s.Synthetic)
	dst = appendIntOmit(dst, "truncated_chars", s.TruncatedChars)
	dst = appendStringOmit(dst, "audit", s.Audit)
	return appendStringOmit(dst, "env_snapshot", string(s.EnvSnapshot))
}

// appendKey appends `"name":`, after a comma unless it opens its object.
func appendKey(dst []byte, name string) []byte {
	if dst[len(dst)-1] != '{' {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, name...)
	return append(dst, '"', ':')
}

func appendIntField(dst []byte, name string, v int) []byte {
	return strconv.AppendInt(appendKey(dst, name), int64(v), 10)
}

func appendIntOmit(dst []byte, name string, v int) []byte {
	if v == 0 {
		return dst
	}
	return appendIntField(dst, name, v)
}

func appendInt64Omit(dst []byte, name string, v int64) []byte {
	if v == 0 {
		return dst
	}
	return strconv.AppendInt(appendKey(dst, name), v, 10)
}

func appendBoolOmit(dst []byte, name string, v bool) []byte {
	if !v {
		return dst
	}
	return append(appendKey(dst, name), "true"...)
}

func appendStringField(dst []byte, name, v string) []byte {
	return appendString(appendKey(dst, name), v)
}

func appendStringOmit(dst []byte, name, v string) []byte {
	if v == "" {
		return dst
	}
	return appendStringField(dst, name, v)
}

// appendRawOmit appends a JSON text compacted, as encoding/json does for a
// json.RawMessage; false if it is not valid JSON.
func appendRawOmit(dst []byte, name string, raw json.RawMessage) ([]byte, bool) {
	if len(raw) == 0 {
		return dst, true
	}
	if !json.Valid(raw) {
		return dst, false
	}
	dst = appendKey(dst, name)
	if isCompact(raw) {
		return append(dst, raw...), true
	}
	buf := bytes.NewBuffer(dst)
	if json.Compact(buf, raw) != nil {
		return dst, false
	}
	return buf.Bytes(), true
}

// appendFloat appends f as encoding/json does (like ES6); false for NaN and
// the infinities, which JSON does not hold.
func appendFloat(dst []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 becomes e-9
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}

// appendString appends s as a JSON string as encoding/json does with HTML
// escaping off: quotes, backslashes and control characters escaped, each
// byte that is not UTF-8 replaced with U+FFFD, U+2028 and U+2029 escaped.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"
