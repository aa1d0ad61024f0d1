package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/polyloop/polyloop"
)

// replyRecordRoom is what a model_call_result record holds besides its
// reply: the envelope, the step and the call id.
const replyRecordRoom = 4 << 10

// CheckReply checks a reply against the log's limits (polyloop.MaxJSONDepth,
// MaxRecordBytes) before the client returns it: every tool call's arguments
// within CheckJSONLimits, the whole reply, encoded as the log encodes it,
// small enough for its record. A reply beyond them cannot be stored, so it is
// a failure of the call: Caller returns it as a *ResponseError wrapping the
// *polyloop.JSONLimitError (errors.Is polyloop.ErrJSONLimit), not retried,
// and the run finishes llm_error with that diagnostic.
func CheckReply(r polyloop.ModelReply) error {
	for _, tc := range r.ToolCalls {
		if err := polyloop.CheckJSONLimits(tc.Args); err != nil {
			return fmt.Errorf("the arguments of tool call %q (%s) are beyond the log's limits: %w", tc.Name, tc.ID, err)
		}
	}
	if replyBound(r) <= polyloop.MaxRecordBytes-replyRecordRoom && argsValid(r) {
		return nil // it encodes, and to no more than the bound: no need to encode it here
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("the reply does not encode: %w", err)
	}
	if max := polyloop.MaxRecordBytes - replyRecordRoom; buf.Len() > max {
		return fmt.Errorf("the reply encodes to %d bytes, beyond the log's limits: %w", buf.Len(),
			&polyloop.JSONLimitError{Limit: polyloop.LimitSize, Offset: max, Max: max})
	}
	return nil
}

// replyBound is an upper bound of the bytes r encodes to: each byte of its
// strings escapes to at most 6 (\u00XX), the arguments are JSON already
// (written as they are, at most compacted), and each field and tool call
// adds a bounded envelope.
func replyBound(r polyloop.ModelReply) int {
	n := 6*(len(r.Text)+len(r.Model)+len(r.FinishReason)+len(r.RequestID)) + 512
	for _, tc := range r.ToolCalls {
		n += 6*(len(tc.ID)+len(tc.Name)) + len(tc.Args) + 64
	}
	return n
}

// argsValid reports whether every tool call's arguments are JSON and the
// cost a number JSON can hold: what besides its size can stop a reply from
// encoding.
func argsValid(r polyloop.ModelReply) bool {
	if c := r.Usage.CostUSD; c != nil && (math.IsNaN(*c) || math.IsInf(*c, 0)) {
		return false
	}
	for _, tc := range r.ToolCalls {
		if len(tc.Args) > 0 && !json.Valid(tc.Args) {
			return false
		}
	}
	return true
}
