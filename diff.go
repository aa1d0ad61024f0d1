package polyloop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// RunDiff is where two runs part: their snapshots' differences and the first
// step, aligned by step number, at which they diverge (DiffRuns).
type RunDiff struct {
	A, B string `json:"-"`
	// Snapshot names the snapshot fields that differ (DiffSnapshots of the
	// snapshots in force at the end of each log).
	Snapshot []string `json:"snapshot,omitempty"`
	// Steps is the number of steps each run completed.
	StepsA int `json:"steps_a"`
	StepsB int `json:"steps_b"`
	// First is the first divergence; nil when the runs agree on every step
	// both completed and on how they finished.
	First *Divergence `json:"first,omitempty"`
}

// Divergence is the first point at which two runs differ.
type Divergence struct {
	Step int `json:"step"`
	// What differs, in the order a step is compared: "reply" (text or tool
	// calls), "decision" (kind, feedback, answer), "action" (which actions),
	// "outcome" (an action's status or completion signal), "observation"
	// (what the history got), "length" (one run has a step the other
	// lacks), "finish" (the stop reason or the answer).
	What string `json:"what"`
	// Index is the action, within the step's batch, for action, outcome
	// and observation.
	Index int `json:"index,omitempty"`
	// A and B are the two sides, as short texts.
	A string `json:"a"`
	B string `json:"b"`
}

// StepView is one completed step of a run as DiffRuns compares it: the
// reply it stood on, the decision, and each action of its batch in order.
type StepView struct {
	Step     int
	Reply    *ModelReply
	Decision DecisionKind
	Feedback string
	Answer   string
	Actions  []Action
	Settled  []SettledAction
}

// Steps returns the completed steps of a log, in order. Records after a
// break of the log's grammar are left out.
func Steps(log RunLog) []StepView {
	var out []StepView
	st := &logState{runID: log.RunID, lastStepOnly: true} // the steps, not the history
	st.onStep = func(sc *StepCompleted, reply *ModelReply, batch []batchAction) {
		v := StepView{Step: sc.Step, Reply: reply, Decision: sc.Decision, Feedback: sc.Feedback, Answer: sc.Answer}
		for _, a := range batch {
			v.Actions = append(v.Actions, a.action())
			v.Settled = append(v.Settled, *a.settled)
		}
		out = append(out, v)
	}
	for _, r := range log.Records {
		if st.apply(r) != nil {
			break
		}
	}
	return out
}

// DiffRuns compares two runs step by step, aligned by step number, and says
// where they first part: the reply, the decision, the actions, their
// outcomes and observations, then the length and the finish. It is a pure
// function of the two logs; ids, attempts, timestamps and usage are not
// compared.
func DiffRuns(a, b RunLog) RunDiff {
	sa, ha := a.Snapshot()
	sb, hb := b.Snapshot()
	d := RunDiff{A: a.RunID, B: b.RunID}
	if ha != hb {
		d.Snapshot = DiffSnapshots(sa, sb)
	}
	va, vb := Steps(a), Steps(b)
	d.StepsA, d.StepsB = len(va), len(vb)
	for i := 0; i < len(va) && i < len(vb); i++ {
		if div := diffStep(va[i], vb[i]); div != nil {
			d.First = div
			return d
		}
	}
	switch {
	case len(va) != len(vb):
		step := min(len(va), len(vb)) + 1
		d.First = &Divergence{Step: step, What: "length", A: fmt.Sprintf("%d steps", len(va)), B: fmt.Sprintf("%d steps", len(vb))}
	default:
		fa, fb := finishOf(a), finishOf(b)
		if fa != fb {
			d.First = &Divergence{Step: len(va), What: "finish", A: fa, B: fb}
		}
	}
	return d
}

func finishOf(log RunLog) string {
	f := log.Finished()
	if f == nil {
		return "unfinished"
	}
	if f.FinalAnswer != "" {
		return string(f.StopReason) + ": " + f.FinalAnswer
	}
	return string(f.StopReason)
}

func diffStep(a, b StepView) *Divergence {
	div := func(what string, index int, x, y string) *Divergence {
		return &Divergence{Step: a.Step, What: what, Index: index, A: x, B: y}
	}
	if ra, rb := replyText(a.Reply), replyText(b.Reply); ra != rb {
		return div("reply", 0, ra, rb)
	}
	if a.Decision != b.Decision || a.Feedback != b.Feedback || a.Answer != b.Answer {
		return div("decision", 0, decisionText(a), decisionText(b))
	}
	if !slices.EqualFunc(a.Actions, b.Actions, Action.Equal) {
		return div("action", 0, actionsText(a.Actions), actionsText(b.Actions))
	}
	for i := range a.Settled {
		x, y := a.Settled[i], b.Settled[i]
		if x.Outcome == nil || y.Outcome == nil {
			continue
		}
		if *x.Outcome != *y.Outcome {
			return div("outcome", i, outcomeText(x), outcomeText(y))
		}
		if x.Observation != y.Observation || x.Synthetic != y.Synthetic || x.TruncatedChars != y.TruncatedChars {
			return div("observation", i, x.Observation, y.Observation)
		}
	}
	return nil
}

func replyText(r *ModelReply) string {
	if r == nil {
		return ""
	}
	var b bytes.Buffer
	b.WriteString(r.Text)
	for _, tc := range r.ToolCalls {
		fmt.Fprintf(&b, " [%s %s]", tc.Name, tc.Args)
	}
	return b.String()
}

func decisionText(v StepView) string {
	switch v.Decision {
	case DecisionInvalid:
		return "invalid: " + v.Feedback
	case DecisionFinal:
		return "final: " + v.Answer
	}
	return "act: " + actionsText(v.Actions)
}

func actionsText(actions []Action) string {
	raw, _ := json.Marshal(actions) // actions always encode
	return string(raw)
}

func outcomeText(s SettledAction) string {
	out := string(s.Outcome.Status)
	if s.Outcome.Done {
		out += " (done)"
	}
	return out
}
