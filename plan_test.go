package polyloop_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/diag"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected outputs of golden files in testdata/")

// parseLogScript turns the compact log notation of testdata/plan into a run
// log. One record per line:
//
//	start
//	intent S.A                         model_call_intent of step S, attempt A
//	result S.A [fail] [tool=T] [text=X]
//	action S.J [from=S.A] [tool=T|code] [replay=safe|never]
//	step S act|invalid|final [from=S.A] [status=executed|not_executed|env_error] [done] [noresult]
//	finish REASON
//	override
//	reception S
//
// Any line may end with seq=N to force a sequence number.
func parseLogScript(t *testing.T, lines []string) polyloop.RunLog {
	t.Helper()
	log := polyloop.RunLog{RunID: "r"}
	for _, line := range lines {
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
		body := scriptBody(t, f[0], pos, opts)
		seq := int64(len(log.Records))
		if s, ok := opts["seq"]; ok {
			seq, _ = strconv.ParseInt(s, 10, 64)
		}
		log.Records = append(log.Records, polyloop.Record{Seq: seq, Body: body})
	}
	return log
}

func stepAttempt(t *testing.T, s string) (int, int) {
	t.Helper()
	a, b, _ := strings.Cut(s, ".")
	step, err1 := strconv.Atoi(a)
	att, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil {
		t.Fatalf("bad step.attempt %q", s)
	}
	return step, att
}

func callID(s string) string { return "m" + s }

func scriptBody(t *testing.T, kind string, pos []string, o map[string]string) polyloop.RecordBody {
	t.Helper()
	switch kind {
	case "start":
		return &polyloop.RunStarted{RunID: "r", Snapshot: polyloop.Snapshot{Agent: "a"}, SnapshotHash: "sha256:x"}
	case "intent":
		s, a := stepAttempt(t, pos[0])
		return &polyloop.ModelCallIntent{Step: s, Attempt: a, CallID: callID(pos[0])}
	case "result":
		s, _ := stepAttempt(t, pos[0])
		r := &polyloop.ModelCallResult{Step: s, CallID: callID(pos[0])}
		if len(pos) > 1 && pos[1] == "fail" {
			r.Failure = diag.From(errors.New("model down"))
			return r
		}
		r.Reply = &polyloop.ModelReply{Text: o["text"]}
		if tool := o["tool"]; tool != "" {
			r.Reply.ToolCalls = []polyloop.ToolCall{{ID: "c", Name: tool, Args: json.RawMessage(`{}`)}}
		}
		return r
	case "action":
		s, j := stepAttempt(t, pos[0])
		from := o["from"]
		if from == "" {
			from = strconv.Itoa(s) + ".1"
		}
		a := polyloop.Action{CallID: "c", Tool: o["tool"], Args: json.RawMessage(`{}`)}
		if a.Tool == "" || a.Tool == "code" {
			a = polyloop.Action{Lang: "bash", Code: "ls"}
		}
		replay := polyloop.NeverReplay
		if o["replay"] == "safe" {
			replay = polyloop.ReplaySafe
		}
		return &polyloop.ActionIntent{Step: s, ActionID: "a" + strconv.Itoa(s), Attempt: j, ModelCallID: callID(from), Action: a, Replay: replay}
	case "step":
		s, _ := strconv.Atoi(pos[0])
		from := o["from"]
		if from == "" {
			from = pos[0] + ".1"
		}
		sc := &polyloop.StepCompleted{Step: s, ModelCallID: callID(from), Decision: polyloop.DecisionKind(pos[1])}
		switch sc.Decision {
		case polyloop.DecisionAct:
			st := polyloop.ActionStatus(o["status"])
			if st == "" {
				st = polyloop.Executed
			}
			sc.ResultID = "a" + pos[0]
			sc.Outcome = &polyloop.StepOutcome{Status: st, Done: slices.Contains(pos, "done")}
			if slices.Contains(pos, "noresult") {
				sc.ResultID = ""
			}
			sc.Synthetic = st != polyloop.Executed
		case polyloop.DecisionInvalid:
			sc.Feedback = "fix it"
		case polyloop.DecisionFinal:
			sc.Answer = "42"
		}
		return sc
	case "finish":
		return &polyloop.RunFinished{StopReason: polyloop.StopReason(pos[0])}
	case "override":
		return &polyloop.ConfigOverride{PreviousHash: "sha256:x", SnapshotHash: "sha256:y", Fields: []string{"system"}}
	case "reception":
		s, _ := strconv.Atoi(pos[0])
		return &polyloop.ChildReception{Step: s, ChildRunID: "r/child", StopReason: polyloop.StopCompleted, Reception: polyloop.ReceptionAccepted}
	}
	t.Fatalf("unknown script record %q", kind)
	return nil
}

func renderPlan(p polyloop.ResumePlan, err error) string {
	if err != nil {
		return "error: " + err.Error()
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
	fmt.Fprintf(&b, "\n%s", p.Reason)
	return b.String()
}

// TestPlanGolden runs the data-driven planner cases of testdata/plan: a log
// in, a plan (or the corruption) out. Regenerate with -rewrite.
func TestPlanGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/plan/*.txt")
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			cases := readCases(t, file)
			var out strings.Builder
			for i, c := range cases {
				got := renderPlan(polyloop.PlanResume(parseLogScript(t, c.log)))
				if *rewrite {
					cases[i].want = got
				} else if got != c.want {
					t.Errorf("case %q:\ngot:\n%s\nwant:\n%s", c.name, got, c.want)
				}
				fmt.Fprintf(&out, "# %s\n%s\n----\n%s\n====\n", c.name, strings.Join(c.log, "\n"), cases[i].want)
			}
			if *rewrite {
				if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

type planCase struct {
	name string
	log  []string
	want string
}

func readCases(t *testing.T, file string) []planCase {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []planCase
	var cur planCase
	var want []string
	inWant := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# "):
			cur, want, inWant = planCase{name: line[2:]}, nil, false
		case line == "----":
			inWant = true
		case line == "====":
			cur.want = strings.Join(want, "\n")
			cases = append(cases, cur)
		case inWant:
			want = append(want, line)
		case strings.TrimSpace(line) != "":
			cur.log = append(cur.log, line)
		}
	}
	return cases
}

// TestPlanTable pins the four-state table of SPEC §7.2 in code.
func TestPlanTable(t *testing.T) {
	for _, tc := range []struct {
		name string
		log  []string
		want polyloop.PlanAction
		err  error
	}{
		{"empty log", nil, "", polyloop.ErrRunNotFound},
		{"neither intent nor result: run the step", []string{"start", "intent 1.1", "result 1.1 tool=x", "action 1.1 replay=safe tool=x", "step 1 act"}, polyloop.PlanStartStep, nil},
		{"intent and result: skip", []string{"start", "intent 1.1", "result 1.1 text=a", "step 1 invalid"}, polyloop.PlanStartStep, nil},
		{"model intent without result: new call", []string{"start", "intent 1.1"}, polyloop.PlanRetryModelCall, nil},
		{"model result without action intent: parse again", []string{"start", "intent 1.1", "result 1.1 tool=x"}, polyloop.PlanReparseReply, nil},
		{"replay-safe action without step: replay", []string{"start", "intent 1.1", "result 1.1 tool=x", "action 1.1 tool=x replay=safe"}, polyloop.PlanReplayAction, nil},
		{"never-replay action without step: unknown", []string{"start", "intent 1.1", "result 1.1 tool=x", "action 1.1 tool=x replay=never"}, polyloop.PlanStopUnknown, nil},
		{"code action is never replayed", []string{"start", "intent 1.1", "result 1.1 text=x", "action 1.1 tool=code replay=safe"}, polyloop.PlanStopUnknown, nil},
		{"result without intent: corrupt", []string{"start", "result 1.1 text=a"}, "", polyloop.ErrCorruptLog},
		{"step without action intent: corrupt", []string{"start", "intent 1.1", "result 1.1 tool=x", "step 1 act"}, "", polyloop.ErrCorruptLog},
		{"env_error decided: finish", []string{"start", "intent 1.1", "result 1.1 tool=x", "action 1.1 tool=x", "step 1 act status=env_error"}, polyloop.PlanWriteFinish, nil},
		{"finished", []string{"start", "intent 1.1", "result 1.1 text=a", "step 1 final", "finish completed"}, polyloop.PlanAlreadyFinished, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := polyloop.PlanResume(parseLogScript(t, tc.log))
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil || p.Action != tc.want {
				t.Fatalf("plan %+v, %v; want %s", p, err, tc.want)
			}
		})
	}
}

// FuzzPlanResume mutates a real log (delete, duplicate, swap, renumber,
// corrupt the JSON) and requires PlanResume never to panic, to be
// deterministic, and to accept only logs whose totals it can compute.
func FuzzPlanResume(f *testing.F) {
	f.Add(uint8(0), uint8(3), uint8(5), []byte(nil))
	f.Add(uint8(1), uint8(2), uint8(0), []byte(nil))
	f.Add(uint8(2), uint8(4), uint8(7), []byte(nil))
	f.Add(uint8(3), uint8(6), uint8(1), []byte(nil))
	f.Add(uint8(4), uint8(9), uint8(2), []byte(`{"seq":3,"kind":"step_completed","v":1,"step":1}`))
	base := fuzzBaseLog(f)
	f.Fuzz(func(t *testing.T, op, i, j uint8, raw []byte) {
		recs := append([]polyloop.Record(nil), base.Records...)
		n := len(recs)
		a, b := int(i)%n, int(j)%n
		switch op % 6 {
		case 0:
			recs = append(recs[:a], recs[a+1:]...)
		case 1:
			recs = append(recs[:a+1], recs[a:]...)
		case 2:
			recs[a], recs[b] = recs[b], recs[a]
		case 3:
			recs[a].Seq = int64(b)
		case 4:
			var r polyloop.Record
			if err := json.Unmarshal(raw, &r); err == nil {
				recs[a] = r
			}
		case 5:
			recs = recs[:a]
		}
		log := polyloop.RunLog{RunID: "ref", Records: recs}
		p1, err1 := polyloop.PlanResume(log)
		p2, err2 := polyloop.PlanResume(log)
		if (err1 == nil) != (err2 == nil) || renderPlan(p1, err1) != renderPlan(p2, err2) {
			t.Fatalf("planner not deterministic: %v / %v", err1, err2)
		}
		if err1 != nil && !errors.Is(err1, polyloop.ErrCorruptLog) && !errors.Is(err1, polyloop.ErrRunNotFound) {
			t.Fatalf("unexpected error class: %v", err1)
		}
		_ = polyloop.History(log)
		_ = polyloop.ComputeTotals(log)
	})
}

func fuzzBaseLog(f *testing.F) polyloop.RunLog {
	data, err := os.ReadFile("testdata/reference.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	var log polyloop.RunLog
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r polyloop.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			f.Fatal(err)
		}
		log.Records = append(log.Records, r)
	}
	return log
}
