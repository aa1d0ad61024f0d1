package polyloop

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestPlanTraces runs the planner's data-driven cases (testdata/plan): a log
// in, the plan or the corruption out. Regenerate with -rewrite.
//
//	plan
//	<log script>
//	----
//	<plan>
func TestPlanTraces(t *testing.T) {
	datadriven.Walk(t, "testdata/plan", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "plan" {
				d.Fatalf(t, "unknown command %q", d.Cmd)
			}
			log := parseLogScript(t, "r", strings.Split(d.Input, "\n"))
			return renderPlan(PlanResume(log))
		})
	})
}

func renderPlan(p ResumePlan, err error) string {
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "plan %s step=%d", p.Action, p.Step)
	if p.Attempt > 0 {
		fmt.Fprintf(&b, " attempt=%d", p.Attempt)
	}
	if p.StopReason != "" {
		fmt.Fprintf(&b, " stop=%s", p.StopReason)
	}
	if p.ModelCallID != "" {
		fmt.Fprintf(&b, " call=%s", p.ModelCallID)
	}
	if p.ActionID != "" {
		fmt.Fprintf(&b, " action=%s", p.ActionID)
	}
	if len(p.Unknown) > 1 {
		fmt.Fprintf(&b, " unknown=%s", strings.Join(p.Unknown, ","))
	}
	fmt.Fprintf(&b, "\n%s\n", p.Reason)
	return b.String()
}

// TestStepTraces pins the step machine's behaviour (testdata/step): facts in,
// the records it asks to make durable and its next effect out. Each file is
// a sequence of scenarios; `new` or `resume` starts one. Regenerate with
// -rewrite.
//
//	new [parallel] [max-steps=N] [max-tokens=N] [max-cost=F] [limit=N]
//	resume [parallel] [...]          the input is a log script (see parseLogScript)
//	reply [text=S] [calls=(T,...)] [tokens=N] [cost=F] [badargs]
//	fail [tokens=N]                  the model call failed
//	decide act=(T,...) | final=S | invalid=S
//	done I status=S [obs=S] [done]   the outcome of action I of the batch
//	receive I                        a child's reception by action I
//
// Tools: echo (replay_safe), send (never_replay); code actions are written
// as the tool "code". The output of each command is the machine's next
// ready — its records, then its effect; a finish effect is followed by the
// RunFinished it writes — or the error the machine returned.
func TestStepTraces(t *testing.T) {
	datadriven.Walk(t, "testdata/step", func(t *testing.T, path string) {
		var m *machine
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "new":
				m = traceMachine(t, d)
				return renderReady(m, m.next())
			case "resume":
				m = traceMachine(t, d)
				return "plan " + string(m.st.plan().Action) + "\n" + renderReady(m, m.next())
			}
			if m == nil {
				d.Fatalf(t, "%s before new or resume", d.Cmd)
			}
			if err := feedTrace(t, d, m); err != nil {
				return "error: " + err.Error() + "\n"
			}
			if d.Cmd == "receive" {
				return renderRecords(m.take())
			}
			return renderReady(m, m.next())
		})
	})
}

func traceSnapshot(t *testing.T, d *datadriven.TestData) Snapshot {
	snap := Snapshot{Agent: "trace", System: "sys", Task: Task{Input: "task"},
		Tools:           []ToolSpec{{Name: "echo", Replay: ReplaySafe}, {Name: "send", Replay: NeverReplay}},
		ParallelActions: d.HasArg("parallel")}
	d.MaybeScanArgs(t, "max-steps", &snap.Limits.MaxSteps)
	d.MaybeScanArgs(t, "max-tokens", &snap.Limits.MaxTokens)
	d.MaybeScanArgs(t, "max-cost", &snap.Limits.MaxCostUSD)
	d.MaybeScanArgs(t, "limit", &snap.Limits.ObservationLimit)
	snap.Synthetic = snap.Synthetic.withDefaults()
	return snap
}

func traceMachine(t *testing.T, d *datadriven.TestData) *machine {
	snap := traceSnapshot(t, d)
	if d.Cmd == "new" {
		m := newMachine(&logState{runID: "r"})
		m.add(&RunStarted{RunID: "r", Snapshot: snap, SnapshotHash: "sha256:trace", LibraryVersion: LibraryVersion})
		return m
	}
	log := parseLogScript(t, "r", strings.Split(d.Input, "\n"))
	rs := log.Records[0].Body.(*RunStarted)
	rs.Snapshot, rs.SnapshotHash = snap, "sha256:trace"
	st, err := foldLog(log)
	if err != nil {
		d.Fatalf(t, "resume: %v", err)
	}
	return newMachine(st)
}

// feedTrace feeds the fact a command describes.
func feedTrace(t *testing.T, d *datadriven.TestData, m *machine) error {
	switch d.Cmd {
	case "reply":
		var r ModelReply
		d.MaybeScanArgs(t, "text", &r.Text)
		if arg, ok := d.Arg("calls"); ok {
			for i, name := range arg.Vals {
				args := json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))
				if d.HasArg("badargs") {
					args = json.RawMessage(`{"i":`)
				}
				r.ToolCalls = append(r.ToolCalls, ToolCall{ID: fmt.Sprintf("c%d", i), Name: name, Args: args})
			}
		}
		d.MaybeScanArgs(t, "tokens", &r.Usage.OutputTokens)
		if d.HasArg("cost") {
			var c float64
			d.ScanArgs(t, "cost", &c)
			r.Usage.CostUSD = &c
		}
		m.modelReplied(r)
	case "fail":
		m.modelFailed(errors.New("model down"))
	case "decide":
		return m.decided(traceDecision(t, d))
	case "done":
		var i int
		var status string
		d.ScanArgs(t, "status", &status)
		if _, err := fmt.Sscan(d.CmdArgs[0].Key, &i); err != nil {
			d.Fatalf(t, "done: action index: %v", err)
		}
		out := ActionOutcome{Status: ActionStatus(status), Done: d.HasArg("done")}
		d.MaybeScanArgs(t, "obs", &out.Observation)
		return m.actionDone(i, out)
	case "receive":
		var i int
		if _, err := fmt.Sscan(d.CmdArgs[0].Key, &i); err != nil {
			d.Fatalf(t, "receive: action index: %v", err)
		}
		m.add(&ChildReception{Step: m.st.step, Action: i, Index: 1, ChildRunID: fmt.Sprintf("r/%d-%d.1", m.st.step, i),
			StopReason: StopCompleted, Reception: ReceptionAccepted})
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	return nil
}

func traceDecision(t *testing.T, d *datadriven.TestData) Decision {
	var s string
	switch {
	case d.MaybeScanArgs(t, "final", &s):
		return Final{Answer: s}
	case d.MaybeScanArgs(t, "invalid", &s):
		return Invalid{Feedback: s}
	}
	arg, ok := d.Arg("act")
	if !ok {
		d.Fatalf(t, "decide: act=, final= or invalid=")
	}
	var act Act
	for i, tool := range arg.Vals {
		a := Action{CallID: fmt.Sprintf("c%d", i), Tool: tool, Args: json.RawMessage(`{}`)}
		if tool == "code" {
			a = Action{Lang: "bash", Code: "ls"}
		}
		act.Actions = append(act.Actions, a)
	}
	return act
}

func renderReady(m *machine, rd ready) string {
	var b strings.Builder
	b.WriteString(renderRecords(rd.records))
	e := rd.effect
	switch e.kind {
	case effectCallModel:
		fmt.Fprintf(&b, "effect call-model %s messages=%s\n", e.req.CallID, renderMessages(e.req.Messages))
	case effectParse:
		b.WriteString("effect parse\n")
	case effectExecute:
		ids := make([]string, len(e.intents))
		for i, in := range e.intents {
			ids[i] = in.ActionID
		}
		fmt.Fprintf(&b, "effect execute %s\n", strings.Join(ids, " "))
	case effectWait:
		b.WriteString("effect wait\n")
	case effectFinish:
		fmt.Fprintf(&b, "effect finish %s\n", e.reason)
		recs, res := m.finish(e, nil)
		b.WriteString(renderRecords(recs))
		fmt.Fprintf(&b, "result %s steps=%d actions=%d unknown-actions=%d unknown-calls=%d\n", res.StopReason,
			res.Totals.Steps, res.Totals.Actions, res.Totals.UnknownActions, res.Totals.UnknownModelCalls)
	}
	return b.String()
}

// renderMessages shows a history as its roles, with the call id a tool
// result answers and its text.
func renderMessages(msgs []Message) string {
	parts := make([]string, len(msgs))
	for i, m := range msgs {
		parts[i] = string(m.Role)
		if m.Role == RoleTool {
			parts[i] += ":" + m.ToolCallID + "=" + strconv.Quote(truncateBytes(m.Content, 24))
		}
	}
	return "(" + strings.Join(parts, " ") + ")"
}

func renderRecords(recs []Record) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "  %d %s\n", r.Seq, renderBody(r.Body))
	}
	return b.String()
}

func renderBody(body RecordBody) string {
	switch b := body.(type) {
	case *RunStarted:
		return "run_started"
	case *ModelCallIntent:
		return fmt.Sprintf("model_call_intent %s", b.CallID)
	case *ModelCallResult:
		if b.Failure != nil {
			out := fmt.Sprintf("model_call_result %s failure=%q", b.CallID, b.Failure.Message)
			if b.Usage != nil {
				out += fmt.Sprintf(" usage=%d", b.Usage.Tokens())
			}
			return out
		}
		return fmt.Sprintf("model_call_result %s calls=%d", b.CallID, len(b.Reply.ToolCalls))
	case *ActionIntent:
		return fmt.Sprintf("action_intent %s attempt=%d tool=%s replay=%s", b.ActionID, b.Attempt, b.Action.Tool, b.Replay)
	case *ActionResult:
		return "action_result " + renderSettled(&b.SettledAction)
	case *StepCompleted:
		if b.Outcome == nil {
			return fmt.Sprintf("step_completed %d %s", b.Step, b.Decision)
		}
		return fmt.Sprintf("step_completed %d act %s", b.Step, renderSettled(&b.SettledAction))
	case *ChildReception:
		return fmt.Sprintf("child_reception %s", b.ChildRunID)
	case *ConfigOverride:
		return "config_override"
	case *RunFinished:
		return fmt.Sprintf("run_finished %s", b.StopReason)
	}
	return fmt.Sprintf("%T", body)
}

func renderSettled(s *SettledAction) string {
	out := fmt.Sprintf("%s %s", s.ResultID, s.Outcome.Status)
	if s.Outcome.Done {
		out += " done"
	}
	if s.Synthetic {
		out += " synthetic"
	}
	if s.TruncatedChars > 0 {
		out += fmt.Sprintf(" truncated=%d", s.TruncatedChars)
	}
	if s.Audit != "" {
		out += fmt.Sprintf(" audit=%q", s.Audit)
	}
	return out
}
