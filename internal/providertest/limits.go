package providertest

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/diag"
	"github.com/polyloop/polyloop/internal/provider"
)

// Nested is n arrays, one inside the other: JSON nested n levels deep.
func Nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// CheckReplyLimits checks the client against the log's limits: tool-call
// arguments at polyloop.MaxJSONDepth are a reply, which a run stores and
// reads back; arguments deeper — one level, and as deep as the client's SDK
// decodes — are a *ResponseError caused by polyloop.ErrJSONLimit after one
// attempt (retries allowed: it is not retried), and a run given such a
// reply finishes llm_error with a diagnostic that says so, its log intact.
func CheckReplyLimits[P provider.Package](t *testing.T, h Harness[P]) {
	t.Run("at the limit", func(t *testing.T) {
		t.Parallel()
		res, l := h.runWithArgs(t, Nested(polyloop.MaxJSONDepth))
		if res.StopReason == polyloop.StopLLMError || len(l.ModelResults()) == 0 || l.ModelResults()[0].Reply == nil {
			t.Fatalf("arguments at the limit: run ended %s; want the reply stored", res.StopReason)
		}
		if got := string(l.ModelResults()[0].Reply.ToolCalls[0].Args); got != Nested(polyloop.MaxJSONDepth) {
			t.Errorf("the stored arguments differ from the reply's (%d bytes, want %d)", len(got), 2*polyloop.MaxJSONDepth)
		}
	})
	for _, depth := range []int{polyloop.MaxJSONDepth + 1, h.DeepestDecoded} {
		t.Run("depth "+strconv.Itoa(depth), func(t *testing.T) {
			t.Parallel()
			srv := h.Serve(t, Response{Status: 200, Body: h.ToolCallBody(Nested(depth))})
			_, err := h.Call(t, h.Client(t, srv.URL()), 2)
			var re *provider.ResponseError[P]
			if !errors.As(err, &re) || !errors.Is(err, polyloop.ErrJSONLimit) || re.Attempts != 1 || srv.Count() != 1 {
				t.Fatalf("arguments %d deep: %v (%d requests); want a *ResponseError caused by ErrJSONLimit, not retried", depth, err, srv.Count())
			}
			if f := re.DiagFields()["failure"]; f != "reply_beyond_limits" || !strings.Contains(err.Error(), "reply beyond the log's limits") {
				t.Errorf("arguments %d deep: failure %q, %v; want the limits named", depth, f, err)
			}
			res, l := h.runWithArgs(t, Nested(depth))
			mr := l.ModelResults()
			if res.StopReason != polyloop.StopLLMError || len(mr) != 1 || mr[0].Failure == nil ||
				!strings.Contains(diagText(mr[0].Failure), "nests deeper than") {
				t.Fatalf("run given arguments %d deep: %s, results %+v; want llm_error with a diagnostic naming the depth", depth, res.StopReason, mr)
			}
		})
	}
}

// runWithArgs runs a one-tool agent whose model answers a call of f with
// args, then "done"; it returns the result and the log read back from the
// store, which must plan.
func (h *Harness[P]) runWithArgs(t *testing.T, args string) (polyloop.RunResult, polyloop.RunLog) {
	t.Helper()
	res, l := h.runOnce(t, Response{Status: 200, Body: h.ToolCallBody(args)})
	if _, err := polyloop.PlanResume(l); err != nil {
		t.Fatalf("the log does not plan: %v", err)
	}
	return res, l
}

// diagText is a diagnostic's message and its causes'.
func diagText(d *diag.Diagnostic) string {
	s := d.Message
	for _, c := range d.Causes {
		s += " | " + diagText(&c)
	}
	return s
}
