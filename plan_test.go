package polyloop_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
)

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
		{"never-replay action without step: unknown", []string{"start", "intent 1.1", "result 1.1 tool=x", "action 1.1 tool=x replay=never"}, polyloop.PlanReconcile, nil},
		{"code action is never replayed", []string{"start", "intent 1.1", "result 1.1 text=x", "action 1.1 tool=code replay=safe"}, polyloop.PlanReconcile, nil},
		{"result without intent: corrupt", []string{"start", "result 1.1 text=a"}, "", polyloop.ErrCorruptLog},
		{"step without action intent: corrupt", []string{"start", "intent 1.1", "result 1.1 tool=x", "step 1 act"}, "", polyloop.ErrCorruptLog},
		{"env_error decided: finish", []string{"start", "intent 1.1", "result 1.1 tool=x", "action 1.1 tool=x", "step 1 act status=env_error"}, polyloop.PlanWriteFinish, nil},
		{"finished", []string{"start", "intent 1.1", "result 1.1 text=a", "step 1 final", "finish completed"}, polyloop.PlanAlreadyFinished, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := polyloop.PlanResume(polyloop.ParseLogScript(t, "r", tc.log))
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
		if (err1 == nil) != (err2 == nil) || polyloop.RenderPlan(p1, err1) != polyloop.RenderPlan(p2, err2) {
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
