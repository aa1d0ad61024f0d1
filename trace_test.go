package polyloop

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/polyloop/polyloop/diag"
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
	if len(p.Pending) > 0 {
		fmt.Fprintf(&b, " pending=%s", strings.Join(p.Pending, ","))
	}
	if len(p.Reconcile) > 0 {
		fmt.Fprintf(&b, " reconcile=%s", strings.Join(p.Reconcile, ","))
	}
	if len(p.Rerun) > 0 {
		fmt.Fprintf(&b, " rerun=%s", strings.Join(p.Rerun, ","))
	}
	if p.EnvSnapshot != "" {
		fmt.Fprintf(&b, " env=%s", strings.TrimPrefix(string(p.EnvSnapshot), "sha256:"))
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
//	    [time-limit=D] [working-limit=D]
//	resume [parallel] [...]          the input is a log script (see parseLogScript)
//	reply [text=S] [calls=(T,...)] [tokens=N] [cost=F] [badargs]
//	fail [tokens=N]                  the model call failed
//	decide act=(T,...) | final=S | invalid=S
//	done I status=S [obs=S] [done]   the outcome of action I of the batch
//	receive I                        a child's reception by action I
//	approve ID [deny] [note=S]       Runner.Approve's record, then a resume
//	deliver ID status=S [obs=S]      Runner.Deliver's record, then a resume
//	again                            a resume of the log so far
//	advance D                        the clock moves on by D (a duration)
//	view V [text=S]                  the agent's view is at version V (rendered S)
//	op NAME [outcome=O]              a maintenance operation's record
//	maintained                       the step's maintenance returned
//	env REF                          the environment is in snapshot REF (effectEnv done)
//	envfail I                        the environment could not be made ready for action I
//
// `new env` / `resume env`: the run has an environment (tool box,
// restore_and_replay); `done I ... env=REF` is the snapshot after it.
//
// `new` and `resume` take `view` (the snapshot has a view) and `maintain`
// (it has a maintainer).
//
// Tools: echo (replay_safe), send (never_replay), ask (needs approval,
// never_replay), askd (needs approval within 1h), hook (deferred, within
// 1h); code actions are written as the tool "code". The output of each
// command is the machine's next ready — its records, then its effect; a
// finish effect is followed by the RunFinished it writes — or the error the
// machine returned. A resume prints the plan first. Each write — the
// records of one Append — is headed by its boundary (writeStarts): the
// record the write comes after, or, for an invocation's first write, how
// that invocation began.
func TestStepTraces(t *testing.T) {
	datadriven.Walk(t, "testdata/step", func(t *testing.T, path string) {
		tr := &trace{}
		datadriven.RunTest(t, path, tr.run)
	})
}

// traceStart is the clock of each trace scenario at its start.
var traceStart = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// trace is the state of a trace file: the machine, the log it has written
// and the clock.
type trace struct {
	m       *machine
	log     []Record
	clock   time.Time
	started Snapshot
	// reconciles: the executor answers for actions of unknown outcome
	// (resume reconciles).
	reconciles bool
}

func (tr *trace) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "new", "resume":
		tr.clock = traceStart
		tr.m, tr.log = traceMachine(t, d)
		tr.reconciles = d.HasArg("reconciles")
		if d.Cmd == "new" {
			return tr.ready()
		}
		return tr.resumed()
	case "advance":
		var dur time.Duration
		var err error
		if dur, err = time.ParseDuration(d.CmdArgs[0].Key); err != nil {
			d.Fatalf(t, "advance: %v", err)
		}
		tr.clock = tr.clock.Add(dur)
		return fmt.Sprintf("clock %s\n", tr.clock.Format(time.RFC3339))
	case "approve", "deliver":
		prev := tr.last()
		tr.answer(t, d)
		answer := tr.log[len(tr.log)-1:]
		return renderWrite(prev, answer, true) + tr.resumed()
	case "again":
		return tr.resumed()
	}
	if tr.m == nil {
		d.Fatalf(t, "%s before new or resume", d.Cmd)
	}
	tr.m.now = tr.clock // as the driver's tickFact
	if err := feedTrace(t, d, tr.m); err != nil {
		return "error: " + err.Error() + "\n"
	}
	if d.Cmd == "receive" || d.Cmd == "op" {
		prev, first := tr.last(), tr.m.wrote == nil
		recs := tr.m.take()
		tr.log = append(tr.log, recs...)
		return renderWrite(prev, recs, first)
	}
	return tr.ready()
}

func (tr *trace) ready() string {
	tr.m.now = tr.clock
	prev, first := tr.last(), tr.m.wrote == nil
	out, recs := renderReady(tr.m, tr.m.next())
	tr.log = append(tr.log, recs...)
	if len(recs) == 0 {
		return out
	}
	return writeHeader(prev, recs, first) + out
}

// last is the body of the last record of the log, or nil.
func (tr *trace) last() RecordBody {
	if len(tr.log) == 0 {
		return nil
	}
	return tr.log[len(tr.log)-1].Body
}

// writeHeader names a write's boundary: the record it comes after, or,
// for an invocation's first write, how the invocation began.
func writeHeader(prev RecordBody, recs []Record, first bool) string {
	if first {
		return "write, begins an invocation: " + invocationEvidence(prev, recs[0].Body) + "\n"
	}
	return "write, after " + string(prev.Kind()) + "\n"
}

// renderWrite renders the records of one write, headed by its boundary.
func renderWrite(prev RecordBody, recs []Record, first bool) string {
	if len(recs) == 0 {
		return ""
	}
	return writeHeader(prev, recs, first) + renderRecords(recs)
}

// resumed folds the log written so far into a new machine, as Resume does.
func (tr *trace) resumed() string {
	st, err := foldLog(RunLog{RunID: "r", Records: tr.log})
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	tr.m = newMachine(st)
	if tr.reconciles {
		tr.m.reconciles = func(Action) bool { return true }
	}
	return "plan " + string(st.plan().Action) + "\n" + tr.ready()
}

// answer appends what Runner.Approve or Runner.Deliver appends.
func (tr *trace) answer(t *testing.T, d *datadriven.TestData) {
	st, err := foldLog(RunLog{RunID: "r", Records: tr.log})
	if err != nil {
		d.Fatalf(t, "%s: %v", d.Cmd, err)
	}
	id := d.CmdArgs[0].Key
	var body RecordBody
	if d.Cmd == "approve" {
		var note string
		d.MaybeScanArgs(t, "note", &note)
		body = &ApprovalDecided{Step: st.step, ActionID: id, Allow: !d.HasArg("deny"), By: "tester", Note: note}
	} else {
		var status string
		d.ScanArgs(t, "status", &status)
		out := ActionOutcome{Status: ActionStatus(status)}
		d.MaybeScanArgs(t, "obs", &out.Observation)
		body = &DeliveryReceived{Step: st.step, ActionID: id, Outcome: out, By: "webhook"}
	}
	rec := Record{Seq: st.next, Body: body}
	if err := st.apply(rec); err != nil {
		d.Fatalf(t, "%s: %v", d.Cmd, err)
	}
	tr.log = append(tr.log, rec)
}

func traceSnapshot(t *testing.T, d *datadriven.TestData) Snapshot {
	snap := Snapshot{Agent: "trace", System: "sys", Task: Task{Input: "task"},
		Tools: []ToolSpec{{Name: "echo", Replay: ReplaySafe}, {Name: "send", Replay: NeverReplay},
			{Name: "ask", Replay: NeverReplay, Approval: ApprovalRequired},
			{Name: "askd", Replay: ReplaySafe, Approval: ApprovalRequired, Deadline: time.Hour},
			{Name: "hook", Deferred: true, Deadline: time.Hour}, {Name: "pay", Replay: ReplayIdempotent}},
		ParallelActions: d.HasArg("parallel")}
	if d.HasArg("env") {
		snap.Environment = &EnvDescription{Backend: "trace", Image: "sha256:" + strings.Repeat("0", 64), Network: NetworkNone}
		snap.Tools = append(snap.Tools, ToolSpec{Name: "box", Replay: RestoreAndReplay})
	}
	if d.HasArg("view") || d.HasArg("maintain") {
		snap.Memory = &MemorySnapshot{}
		if d.HasArg("view") {
			snap.Memory.View, snap.Memory.Template = &Component{Name: "view"}, DefaultViewTemplate
		}
		if d.HasArg("maintain") {
			snap.Memory.Maintainer = &Component{Name: "maintainer"}
		}
	}
	d.MaybeScanArgs(t, "max-steps", &snap.Limits.MaxSteps)
	d.MaybeScanArgs(t, "max-tokens", &snap.Limits.MaxTokens)
	d.MaybeScanArgs(t, "max-cost", &snap.Limits.MaxCostUSD)
	d.MaybeScanArgs(t, "limit", &snap.Limits.ObservationLimit)
	for arg, l := range map[string]*time.Duration{"time-limit": &snap.Limits.TimeLimit, "working-limit": &snap.Limits.WorkingLimit} {
		if d.HasArg(arg) {
			var s string
			d.ScanArgs(t, arg, &s)
			var err error
			if *l, err = time.ParseDuration(s); err != nil {
				d.Fatalf(t, "%s: %v", arg, err)
			}
		}
	}
	snap.Synthetic = snap.Synthetic.withDefaults()
	snap.Synthetic.Denied = DefaultDenied
	return snap
}

// traceMachine is the machine of a new run, or of a run resumed from the
// log script of the command's input, and the log it stands on (records not
// yet handed out excepted).
func traceMachine(t *testing.T, d *datadriven.TestData) (*machine, []Record) {
	snap := traceSnapshot(t, d)
	if d.Cmd == "new" {
		m := newMachine(&logState{runID: "r"})
		// Runner.started stamps the run_started of a snapshot with a time
		// limit: its wall clock counts from it.
		var at time.Time
		if snap.Limits.clocked() {
			at = traceStart
		}
		m.addRecord(Record{At: at, Body: &RunStarted{RunID: "r", Snapshot: snap, SnapshotHash: "sha256:trace", LibraryVersion: LibraryVersion}})
		return m, nil
	}
	log := parseLogScript(t, "r", strings.Split(d.Input, "\n"))
	rs := log.Records[0].Body.(*RunStarted)
	rs.Snapshot, rs.SnapshotHash = snap, "sha256:trace"
	st, err := foldLog(log)
	if err != nil {
		d.Fatalf(t, "resume: %v", err)
	}
	return newMachine(st), log.Records
}

// feedVerdict feeds a reconciler's answer: "verdict ID KIND [status=S]
// [obs=S]" about the open action ID (KIND completed, not_happened,
// unknown; "completed" without status= is refused as the contract says).
func feedVerdict(t *testing.T, d *datadriven.TestData, m *machine) error {
	id, kind := d.CmdArgs[0].Key, VerdictKind(d.CmdArgs[1].Key)
	v := Verdict{Kind: kind, Said: "the service says " + string(kind)}
	if d.HasArg("status") {
		out := ActionOutcome{}
		var status string
		d.ScanArgs(t, "status", &status)
		out.Status = ActionStatus(status)
		d.MaybeScanArgs(t, "obs", &out.Observation)
		v.Outcome = &out
	}
	for _, a := range m.st.batch {
		if a.intent != nil && a.intent.ActionID == id {
			return m.reconciled(a.intent, v)
		}
	}
	d.Fatalf(t, "verdict: no action %s", id)
	return nil
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
		var env string
		d.MaybeScanArgs(t, "env", &env)
		if env != "" {
			env = "sha256:" + env
		}
		return m.actionDoneEnv(i, out, EnvSnapshot(env))
	case "env":
		m.envReady(EnvSnapshot("sha256:" + d.CmdArgs[0].Key))
	case "envfail":
		var i int
		if _, err := fmt.Sscan(d.CmdArgs[0].Key, &i); err != nil {
			d.Fatalf(t, "envfail: action index: %v", err)
		}
		m.envFailed(i, &EnvOpError{Op: "restore", Backend: "trace", RunID: "r", Kind: ErrEnvSnapshotNotFound})
	case "receive":
		var i int
		if _, err := fmt.Sscan(d.CmdArgs[0].Key, &i); err != nil {
			d.Fatalf(t, "receive: action index: %v", err)
		}
		m.add(&ChildReception{Step: m.st.step, Action: i, Index: 1, ChildRunID: fmt.Sprintf("r/%d-%d.1", m.st.step, i),
			StopReason: StopCompleted, Reception: ReceptionAccepted})
	case "view":
		var v int64
		if _, err := fmt.Sscan(d.CmdArgs[0].Key, &v); err != nil {
			d.Fatalf(t, "view: version: %v", err)
		}
		text := fmt.Sprintf("view at %d", v)
		d.MaybeScanArgs(t, "text", &text)
		m.viewed(ViewRef{Name: "notes", Version: v}, text)
	case "op":
		outcome := string(OpDone)
		d.MaybeScanArgs(t, "outcome", &outcome)
		op := &MaintenanceOp{Step: m.st.step, Name: d.CmdArgs[0].Key, Outcome: OpOutcome(outcome), Value: json.RawMessage(`{}`)}
		if op.Outcome != OpDone {
			op.Failure = &diag.Diagnostic{Message: "stale basis"}
		}
		if op.Outcome == OpFailed {
			op.Value = nil
		}
		m.add(op)
	case "maintained":
		m.maintained()
	case "verdict":
		return feedVerdict(t, d, m)
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

// renderReady renders a ready and returns the records it wrote (a finish's
// RunFinished included).
func renderReady(m *machine, rd ready) (string, []Record) {
	var b strings.Builder
	recs := rd.records
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
		if m.st.clocked {
			fmt.Fprintf(&b, "clock elapsed=%s working=%s\n", m.st.clock.elapsed(m.now), m.st.clock.working)
		}
		fin, res := m.finish(e, nil)
		recs = append(recs, fin...)
		b.WriteString(renderRecords(fin))
		fmt.Fprintf(&b, "result %s steps=%d actions=%d unknown-actions=%d unknown-calls=%d\n", res.StopReason,
			res.Totals.Steps, res.Totals.Actions, res.Totals.UnknownActions, res.Totals.UnknownModelCalls)
	case effectSuspend:
		fmt.Fprintf(&b, "effect suspend approvals=%s deliveries=%s\n", gateIDs(e.suspended.Approvals), gateIDs(e.suspended.Deliveries))
	case effectView:
		b.WriteString("effect view\n")
	case effectReconcile:
		ids := make([]string, len(e.intents))
		for i, in := range e.intents {
			ids[i] = in.ActionID + "@" + strconv.Itoa(in.Attempt)
		}
		fmt.Fprintf(&b, "effect reconcile %s\n", strings.Join(ids, " "))
	case effectEnv:
		from := strings.TrimPrefix(string(e.envFrom), "sha256:")
		if from == "" {
			from = "(image)"
		}
		fmt.Fprintf(&b, "effect env from=%s for=%d\n", from, e.envFor)
	case effectMaintain:
		fmt.Fprintf(&b, "effect maintain step=%d decision=%s messages=%s", e.maint.Step, e.maint.Decision, renderMessages(e.maint.Messages))
		if e.maint.View != nil {
			fmt.Fprintf(&b, " view=%d", e.maint.View.Version)
		}
		b.WriteString("\n")
	}
	if e.kind == effectParse || e.kind == effectView || e.kind == effectReconcile || e.kind == effectEnv {
		recs = nil // what is pending waits for the next write
	}
	return b.String(), recs
}

func gateIDs(gs []PendingGate) string {
	ids := make([]string, len(gs))
	for i, g := range gs {
		ids[i] = g.ActionID
		if g.Deadline != nil {
			ids[i] += "@" + g.Deadline.Format("15:04")
		}
	}
	return "(" + strings.Join(ids, ",") + ")"
}

// renderMessages shows a history as its roles, with the call id a tool
// result answers and its text.
func renderMessages(msgs []Message) string {
	parts := make([]string, len(msgs))
	for i, m := range msgs {
		parts[i] = string(m.Role)
		if m.Role == RoleSystem && i > 0 {
			parts[i] += "=" + strconv.Quote(m.Content)
		}
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
		if b.View != nil {
			return fmt.Sprintf("model_call_intent %s view=%s@%d", b.CallID, b.View.Name, b.View.Version)
		}
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
		out := fmt.Sprintf("action_intent %s attempt=%d tool=%s replay=%s", b.ActionID, b.Attempt, b.Action.Tool, b.Replay)
		if b.EnvSnapshot != "" {
			out += " env=" + strings.TrimPrefix(string(b.EnvSnapshot), "sha256:")
		}
		return out
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
	case *ApprovalRequested:
		return "approval_requested " + b.ActionID
	case *DeliveryRequested:
		return "delivery_requested " + b.ActionID
	case *ApprovalDecided:
		s := fmt.Sprintf("approval_decided %s allow=%v", b.ActionID, b.Allow)
		if b.Timeout {
			s += " timeout clock=" + b.Clock.Format("15:04")
		}
		return s
	case *DeliveryReceived:
		s := fmt.Sprintf("delivery_received %s %s", b.ActionID, b.Outcome.Status)
		if b.Timeout {
			s += " timeout clock=" + b.Clock.Format("15:04")
		}
		return s
	case *RunFinished:
		return fmt.Sprintf("run_finished %s", b.StopReason)
	case *ActionReconciled:
		s := fmt.Sprintf("action_reconciled %s attempt=%d verdict=%s resolution=%s", b.ActionID, b.Attempt, b.Verdict, b.Resolution)
		if b.Status != "" {
			s += " status=" + string(b.Status)
		}
		return s
	case *MaintenanceOp:
		return fmt.Sprintf("maintenance_op %d %s %s", b.Step, b.Name, b.Outcome)
	case *MaintenanceDone:
		return fmt.Sprintf("maintenance_done %d", b.Step)
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
	if s.EnvSnapshot != "" {
		out += " env=" + strings.TrimPrefix(string(s.EnvSnapshot), "sha256:")
	}
	return out
}
