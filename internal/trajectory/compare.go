package trajectory

import (
	"fmt"
	"slices"

	"github.com/polyloop/polyloop"
)

// Divergence is where two trajectories first differ, step by step: the
// step number (0 when they differ before any step: task or system prompt)
// and what differs there.
type Divergence struct {
	Step int    `json:"step"`
	What string `json:"what"`
}

// FirstDivergence aligns two trajectories by step number and returns the
// first step whose content differs: the reply's text or tool calls, the
// decision, an action, an action's status or observation. Usage, timing,
// model ids and attempts are not content. It returns nil when the shorter
// trajectory is a prefix of the longer one and both ended alike.
func FirstDivergence(a, b *Trajectory) *Divergence {
	if a.Task != b.Task {
		return &Divergence{What: "task"}
	}
	if a.System != b.System {
		return &Divergence{What: "system prompt"}
	}
	for i := 0; i < min(len(a.Steps), len(b.Steps)); i++ {
		if what := stepDiff(a.Steps[i], b.Steps[i]); what != "" {
			return &Divergence{Step: a.Steps[i].Step, What: what}
		}
	}
	if len(a.Steps) != len(b.Steps) {
		n := min(len(a.Steps), len(b.Steps))
		return &Divergence{Step: n + 1, What: fmt.Sprintf("one run has %d steps, the other %d", len(a.Steps), len(b.Steps))}
	}
	if stop(a) != stop(b) {
		return &Divergence{Step: len(a.Steps), What: fmt.Sprintf("stop reason: %s vs %s", stop(a), stop(b))}
	}
	return nil
}

func stop(t *Trajectory) string {
	if t.Finished == nil {
		return "unfinished"
	}
	return string(t.Finished.StopReason)
}

func stepDiff(a, b *Step) string {
	if a.Step != b.Step {
		return "step numbers"
	}
	ra, rb := a.Reply(), b.Reply()
	switch {
	case (ra == nil) != (rb == nil):
		return "model reply (one call has no reply)"
	case ra != nil && ra.Text != rb.Text:
		return "reply text"
	case ra != nil && !slices.EqualFunc(ra.ToolCalls, rb.ToolCalls, func(x, y polyloop.ToolCall) bool {
		return x.Name == y.Name && string(x.Args) == string(y.Args)
	}):
		return "tool calls"
	}
	ca, cb := a.Completed, b.Completed
	switch {
	case (ca == nil) != (cb == nil):
		return "one step is unfinished"
	case ca != nil && (ca.Decision != cb.Decision || ca.Feedback != cb.Feedback || ca.Answer != cb.Answer):
		return "decision"
	}
	sa, sb := settled(a), settled(b)
	if len(sa) != len(sb) {
		return "number of actions"
	}
	for i := range sa {
		x, y := sa[i], sb[i]
		switch {
		case !x.Action.Equal(y.Action):
			return fmt.Sprintf("action %d", i+1)
		case (x.Settled == nil) != (y.Settled == nil):
			return fmt.Sprintf("outcome of action %d (unknown in one run)", i+1)
		case x.Settled != nil && x.Settled.Outcome.Status != y.Settled.Outcome.Status:
			return fmt.Sprintf("status of action %d", i+1)
		case x.Settled != nil && x.Settled.Observation != y.Settled.Observation:
			return fmt.Sprintf("observation of action %d", i+1)
		}
	}
	return ""
}

// settled is the last attempt of each action of the step, in batch order.
func settled(s *Step) []*Action {
	var out []*Action
	for _, a := range s.Actions {
		if a.Index < len(out) {
			out[a.Index] = a
			continue
		}
		for len(out) < a.Index {
			out = append(out, &Action{})
		}
		out = append(out, a)
	}
	return out
}
