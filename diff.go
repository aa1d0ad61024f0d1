package polyloop

import (
	"bytes"
	"cmp"
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
	it := newStepIter(log.Stream(), nil)
	for v, ok := it.next(); ok; v, ok = it.next() {
		out = append(out, v)
	}
	return out
}

// stepIter gives a log's completed steps one at a time, folding its
// records as far as the next step's record: DiffRuns walks two runs side
// by side without holding every step of either, nor, from a store, every
// row (LogStream).
type stepIter struct {
	ob      *observing // the fold, which may tell an observer too
	records *LogStream
	view    *StepView // the step the last record folded completed
}

// newStepIter walks s's steps; o, when not nil, is told what each record
// is (ObserveStream) by the same fold.
func newStepIter(s *LogStream, o LogObserver) *stepIter {
	it := &stepIter{ob: newObserving(s.RunID(), o), records: s} // the steps, not the history
	it.ob.st.onStep = func(sc *StepCompleted, reply *ModelReply, batch []batchAction) {
		v := StepView{Step: sc.Step, Reply: reply, Decision: sc.Decision, Feedback: sc.Feedback, Answer: sc.Answer}
		for _, a := range batch {
			v.Actions = append(v.Actions, a.action())
			v.Settled = append(v.Settled, *a.settled)
		}
		it.view = &v
	}
	return it
}

// next is the log's next completed step; false past the last, or at a
// break of the grammar (the log is then read to its end, for its finish).
func (it *stepIter) next() (StepView, bool) {
	for it.view == nil && it.records.Next() {
		it.ob.add(it.records.Record())
	}
	v := it.view
	it.view = nil
	if v == nil {
		return StepView{}, false
	}
	return *v, true
}

// DiffRuns compares two runs step by step, aligned by step number, and says
// where they first part: the reply, the decision, the actions, their
// outcomes and observations, then the length and the finish. It is a pure
// function of the two logs; ids, attempts, timestamps and usage are not
// compared.
func DiffRuns(a, b RunLog) RunDiff {
	d, _ := DiffStreams(a.Stream(), b.Stream()) // logs read: no read fails
	return d
}

// DiffStreams is DiffRuns of two logs read as they are compared, a chunk of
// each at a time (StreamLog): what it holds does not grow with the runs'
// length. The error is either stream's (LogStream.Err).
func DiffStreams(a, b *LogStream) (RunDiff, error) {
	d, _, err := DiffObserve(a, b, nil, nil)
	return d, err
}

// DiffObserve is DiffStreams telling oa and ob (either may be nil) what
// each record of a and of b is, as ObserveStream does, by the fold that
// compares them: a comparison's page reads and folds each log once for
// the diff and for what it shows of each run. It returns what each fold
// ends with (ObserveStream's).
func DiffObserve(a, b *LogStream, oa, ob LogObserver) (RunDiff, [2]ObservedLog, error) {
	d := RunDiff{A: a.RunID(), B: b.RunID()}
	// The two runs' steps side by side, one pair at a time: what DiffRuns
	// holds does not grow with the runs' length.
	ia, ib := newStepIter(a, oa), newStepIter(b, ob)
	for {
		va, okA := ia.next()
		vb, okB := ib.next()
		if okA {
			d.StepsA++
		}
		if okB {
			d.StepsB++
		}
		if !okA && !okB {
			break
		}
		if okA && okB && d.First == nil {
			d.First = diffStep(va, vb)
		}
	}
	if err := cmp.Or(a.Err(), b.Err()); err != nil {
		return RunDiff{A: d.A, B: d.B}, [2]ObservedLog{}, err
	}
	ends := [2]ObservedLog{ia.ob.result(), ib.ob.result()}
	// The snapshots in force at the end of each log (RunLog.Snapshot's).
	if ends[0].SnapshotHash != ends[1].SnapshotHash {
		d.Snapshot = DiffSnapshots(ends[0].Snapshot, ends[1].Snapshot)
	}
	if d.First != nil {
		return d, ends, nil
	}
	switch {
	case d.StepsA != d.StepsB:
		step := min(d.StepsA, d.StepsB) + 1
		d.First = &Divergence{Step: step, What: "length", A: fmt.Sprintf("%d steps", d.StepsA), B: fmt.Sprintf("%d steps", d.StepsB)}
	default:
		fa, fb := finishOf(ends[0].Finished), finishOf(ends[1].Finished)
		if fa != fb {
			d.First = &Divergence{Step: d.StepsA, What: "finish", A: fa, B: fb}
		}
	}
	return d, ends, nil
}

// finishOf is how a log ends, from its last record's run_finished (nil:
// it has none).
func finishOf(f *RunFinished) string {
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
