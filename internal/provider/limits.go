package provider

import (
	"bytes"
	"encoding/json"
	"fmt"

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
