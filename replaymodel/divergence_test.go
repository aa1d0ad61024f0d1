package replaymodel_test

import (
	"context"
	"errors"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/diag"
	"github.com/polyloop/polyloop/replaymodel"
)

// divergence is where a changed request must diverge: "" means it must be
// answered.
type divergence struct {
	what    string
	message int
}

func TestDivergence(t *testing.T) {
	t.Parallel()
	ok := divergence{}
	tests := []struct {
		name   string
		step   int
		change func(*polyloop.ModelRequest)
		// The expected outcome under each match level.
		structure, exact divergence
	}{
		{"unchanged", 3, func(*polyloop.ModelRequest) {}, ok, ok},
		{"other observation text", 2, func(r *polyloop.ModelRequest) { r.Messages[3].Content = "12" }, ok, divergence{"content", 3}},
		{"synthetic observation", 2, func(r *polyloop.ModelRequest) { r.Messages[3].Synthetic = true }, ok, divergence{"synthetic", 3}},
		{"other feedback text", 3, func(r *polyloop.ModelRequest) { r.Messages[5].Content = "Use a tool." }, ok, divergence{"content", 5}},
		{"other system prompt", 1, func(r *polyloop.ModelRequest) { r.Messages[0].Content = "Answer in JSON." }, ok, divergence{"content", 0}},
		{"no system prompt", 2, func(r *polyloop.ModelRequest) { r.Messages = r.Messages[1:] }, ok, divergence{"role", 0}},
		{"no system prompt, other task", 2, func(r *polyloop.ModelRequest) {
			r.Messages = r.Messages[1:]
			r.Messages[0].Content = "other"
		}, divergence{"content", 0}, divergence{"role", 0}},
		{"other task", 1, func(r *polyloop.ModelRequest) { r.Messages[1].Content = "Count words." }, divergence{"content", 1}, divergence{"content", 1}},
		{"other assistant text", 2, func(r *polyloop.ModelRequest) { r.Messages[2].Content = "Hm." }, divergence{"content", 2}, divergence{"content", 2}},
		{"other tool call args", 2, func(r *polyloop.ModelRequest) {
			r.Messages[2].ToolCalls = []polyloop.ToolCall{{ID: "call_1", Name: "read", Args: []byte(`{"path":"x"}`)}}
		}, divergence{"tool_calls", 2}, divergence{"tool_calls", 2}},
		{"tool result for another call", 2, func(r *polyloop.ModelRequest) { r.Messages[3].ToolCallID = "" }, divergence{"tool_call_id", 3}, divergence{"tool_call_id", 3}},
		{"feedback where the run acted", 2, func(r *polyloop.ModelRequest) {
			r.Messages[3] = polyloop.Message{Role: polyloop.RoleUser, Content: "bad", Feedback: true}
		}, divergence{"role", 3}, divergence{"role", 3}},
		{"missing step", 2, func(r *polyloop.ModelRequest) { r.Messages = r.Messages[:2] }, divergence{"message count", 2}, divergence{"message count", 2}},
		{"extra message", 3, func(r *polyloop.ModelRequest) {
			r.Messages = append(r.Messages, polyloop.Message{Role: polyloop.RoleUser, Content: "more"})
		}, divergence{"message count", 6}, divergence{"message count", 6}},
		{"other tools", 1, func(r *polyloop.ModelRequest) { r.Tools = nil }, ok, divergence{"tools", -1}},
		{"other params", 1, func(r *polyloop.ModelRequest) { r.Params.Temperature = ptr(0.5) }, ok, divergence{"params", -1}},
	}
	for _, tt := range tests {
		for m, want := range map[replaymodel.Match]divergence{
			replaymodel.MatchStructure: tt.structure, replaymodel.MatchExact: tt.exact, replaymodel.MatchSteps: ok,
		} {
			t.Run(tt.name+"/"+string(m), func(t *testing.T) {
				t.Parallel()
				req := requestFor(tt.step)
				tt.change(&req)
				_, err := newClient(t, m).Complete(context.Background(), req)
				checkDivergence(t, err, tt.step, want)
			})
		}
	}
}

func checkDivergence(t *testing.T, err error, step int, want divergence) {
	t.Helper()
	if want.what == "" {
		if err != nil && !errors.Is(err, replaymodel.ErrRecordedFailure) {
			t.Fatalf("err = %v, want the recorded answer", err)
		}
		return
	}
	var d *replaymodel.DivergenceError
	if !errors.Is(err, replaymodel.ErrDiverged) || !errors.As(err, &d) {
		t.Fatalf("err = %v, want a DivergenceError", err)
	}
	if d.What != want.what || d.Message != want.message || d.Step != step || d.RunID != recordedRun {
		t.Fatalf("divergence %+v, want %s at message %d of step %d", d, want.what, want.message, step)
	}
}

func TestDivergenceErrorText(t *testing.T) {
	t.Parallel()
	req := requestFor(2)
	req.Messages[3].Content = "12"
	_, err := newClient(t, replaymodel.MatchExact).Complete(context.Background(), req)
	want := `replaymodel: request for step 2 diverges from recorded run "rec-1" at message 3 (content): recorded "line 1\n...\nline 12", got "12"`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant   %s", err, want)
	}
	fields := diag.From(err).Fields
	if fields["replay_diverged"] != "content" || fields["replay_message"] != "3" || fields["replay_step"] != "2" {
		t.Errorf("diagnostic fields = %v", fields)
	}
}

func TestDivergenceExcerptsBounded(t *testing.T) {
	t.Parallel()
	req := requestFor(1)
	long := make([]byte, 10000)
	for i := range long {
		long[i] = 'x'
	}
	req.Messages[1].Content = string(long)
	_, err := newClient(t, "").Complete(context.Background(), req)
	if err == nil || len(err.Error()) > 600 {
		t.Fatalf("error of %d bytes, want a bounded divergence error: %.200v", len(err.Error()), err)
	}
}
