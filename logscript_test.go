package polyloop

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop/diag"
)

// parseLogScript turns the compact log notation of the trace files
// (testdata/plan, testdata/step) into a run log. One record per line:
//
//	start
//	intent S.A                         model_call_intent of step S, attempt A
//	result S.A [fail] [tool=T] [text=X]
//	action S.J [from=S.A] [tool=T|code] [replay=safe|never|idempotent|restore] [index=I of=N] [env=REF]
//	settle S ID [status=executed|not_executed|env_error] [done] [env=REF]
//	step S act|invalid|final [from=S.A] [id=ID] [status=...] [done] [noresult] [env=REF]
//	finish REASON
//	override
//	reception S [action=I]
//	reconciled S ID verdict=V [attempt=A] [status=S]
//
// An action's id is derived from its step, index and batch size as the
// loop derives it; a settle or an act step names the action it settles
// (id=, default the step's only action). Any line may end with seq=N to
// force a sequence number.
func parseLogScript(t testing.TB, runID string, lines []string) RunLog {
	t.Helper()
	log := RunLog{RunID: runID}
	for _, line := range lines {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		opts := map[string]string{}
		var pos []string
		for _, w := range f[1:] {
			if k, v, ok := strings.Cut(w, "="); ok {
				opts[k] = v
			} else {
				pos = append(pos, w)
			}
		}
		body := scriptBody(t, runID, f[0], pos, opts)
		seq := int64(len(log.Records))
		if s, ok := opts["seq"]; ok {
			seq, _ = strconv.ParseInt(s, 10, 64)
		}
		log.Records = append(log.Records, Record{Seq: seq, Body: body})
	}
	return log
}

func stepAttempt(t testing.TB, s string) (int, int) {
	t.Helper()
	a, b, _ := strings.Cut(s, ".")
	step, err1 := strconv.Atoi(a)
	att, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil {
		t.Fatalf("bad step.attempt %q", s)
	}
	return step, att
}

func atoi(t testing.TB, s string, dflt int) int {
	t.Helper()
	if s == "" {
		return dflt
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("bad number %q", s)
	}
	return n
}

func scriptBody(t testing.TB, runID, kind string, pos []string, o map[string]string) RecordBody {
	t.Helper()
	switch kind {
	case "start":
		return &RunStarted{RunID: runID, Snapshot: Snapshot{Agent: "a"}, SnapshotHash: "sha256:x"}
	case "intent":
		s, a := stepAttempt(t, pos[0])
		return &ModelCallIntent{Step: s, Attempt: a, CallID: "m" + pos[0]}
	case "result":
		s, a := stepAttempt(t, pos[0])
		r := &ModelCallResult{Step: s, CallID: "m" + pos[0], Attempt: a}
		if slices.Contains(pos, "fail") {
			r.Failure = diag.From(errors.New("model down"))
			return r
		}
		r.Reply = &ModelReply{Text: o["text"]}
		if tool := o["tool"]; tool != "" {
			for i, name := range strings.Split(tool, ",") {
				r.Reply.ToolCalls = append(r.Reply.ToolCalls, ToolCall{ID: "c" + strconv.Itoa(i), Name: name, Args: json.RawMessage(`{}`)})
			}
		}
		return r
	case "action":
		return scriptAction(t, pos, o)
	case "settle":
		s := atoi(t, pos[0], 0)
		return &ActionResult{Step: s, SettledAction: scriptSettled(o, pos[1], slices.Contains(pos, "done"))}
	case "step":
		return scriptStep(t, pos, o)
	case "finish":
		return &RunFinished{StopReason: StopReason(pos[0])}
	case "override":
		return &ConfigOverride{PreviousHash: "sha256:x", SnapshotHash: "sha256:y", Fields: []string{"system"}}
	case "approval", "delivery":
		g := scriptGate(t, pos, o)
		if kind == "approval" {
			return &ApprovalRequested{g}
		}
		return &DeliveryRequested{g}
	case "decide":
		d := &ApprovalDecided{Step: atoi(t, pos[0], 0), ActionID: pos[1], Allow: slices.Contains(pos, "allow"), By: "ana"}
		if slices.Contains(pos, "timeout") {
			at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
			d.By, d.Timeout, d.Clock = "", true, &at
		}
		return d
	case "deliver":
		return &DeliveryReceived{Step: atoi(t, pos[0], 0), ActionID: pos[1], By: "hook",
			Outcome: ActionOutcome{Status: ActionStatus(o["status"]), Observation: "delivered"}}
	case "reconciled":
		v := VerdictKind(o["verdict"])
		b := &ActionReconciled{Step: atoi(t, pos[0], 0), ActionID: pos[1], Attempt: atoi(t, o["attempt"], 1),
			Key: "plk_test", Verdict: v, Resolution: v.resolution(), Status: ActionStatus(o["status"])}
		return b
	case "reception":
		return &ChildReception{Step: atoi(t, pos[0], 0), Action: atoi(t, o["action"], 0), ChildRunID: runID + "/child",
			StopReason: StopCompleted, Reception: ReceptionAccepted}
	}
	t.Fatalf("unknown script record %q", kind)
	return nil
}

// scriptGate is the request of a gate line: "approval <step> index=<i>
// of=<n> tool=<tool>" (and "delivery …"), for the action the batch's
// index-th tool call would be.
func scriptGate(t testing.TB, pos []string, o map[string]string) GateRequest {
	s := atoi(t, pos[0], 0)
	index, of := atoi(t, o["index"], 0), atoi(t, o["of"], 1)
	g := GateRequest{Step: s, ActionID: actionID(s, index, of), Index: index,
		Action: Action{CallID: "c" + strconv.Itoa(index), Tool: o["tool"], Args: json.RawMessage(`{}`)}}
	if of > 1 {
		g.Of = of
	}
	return g
}

func scriptAction(t testing.TB, pos []string, o map[string]string) *ActionIntent {
	s, j := stepAttempt(t, pos[0])
	from := o["from"]
	if from == "" {
		from = strconv.Itoa(s) + ".1"
	}
	index, of := atoi(t, o["index"], 0), atoi(t, o["of"], 1)
	a := Action{CallID: "c" + strconv.Itoa(index), Tool: o["tool"], Args: json.RawMessage(`{}`)}
	if a.Tool == "" || a.Tool == "code" {
		a = Action{Lang: "bash", Code: "ls"}
	}
	replay := NeverReplay
	switch o["replay"] {
	case "safe":
		replay = ReplaySafe
	case "idempotent":
		replay = ReplayIdempotent
	case "restore":
		replay = RestoreAndReplay
	}
	in := &ActionIntent{Step: s, ActionID: actionID(s, index, of), Attempt: j, ModelCallID: "m" + from,
		Action: a, Replay: replay, Index: index}
	if env := o["env"]; env != "" {
		in.EnvSnapshot = EnvSnapshot("sha256:" + env)
	}
	if of > 1 {
		in.Of = of
	}
	return in
}

func scriptSettled(o map[string]string, id string, done bool) SettledAction {
	st := ActionStatus(o["status"])
	if st == "" {
		st = Executed
	}
	sa := SettledAction{ResultID: id, Outcome: &StepOutcome{Status: st, Done: done}, Synthetic: st != Executed}
	if env := o["env"]; env != "" {
		sa.EnvSnapshot = EnvSnapshot("sha256:" + env)
	}
	return sa
}

func scriptStep(t testing.TB, pos []string, o map[string]string) *StepCompleted {
	s := atoi(t, pos[0], 0)
	from := o["from"]
	if from == "" {
		from = pos[0] + ".1"
	}
	sc := &StepCompleted{Step: s, ModelCallID: "m" + from, Decision: DecisionKind(pos[1])}
	switch sc.Decision {
	case DecisionAct:
		id := o["id"]
		if id == "" {
			id = "a" + pos[0]
		}
		sc.SettledAction = scriptSettled(o, id, slices.Contains(pos, "done"))
		if slices.Contains(pos, "noresult") {
			sc.ResultID = ""
		}
	case DecisionInvalid:
		sc.Feedback = "fix it"
	case DecisionFinal:
		sc.Answer = "42"
	}
	return sc
}
