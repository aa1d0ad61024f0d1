package polyloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/diag"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
)

// maintLog is a log whose snapshot has a maintainer (or not), one final
// step, then the bodies given.
func maintLog(maintained bool, tail ...polyloop.RecordBody) polyloop.RunLog {
	snap := polyloop.Snapshot{Agent: "a", Task: polyloop.Task{Input: "x"}}
	if maintained {
		snap.Memory = &polyloop.MemorySnapshot{Maintainer: &polyloop.Component{Name: "m"}}
	}
	bodies := []polyloop.RecordBody{
		&polyloop.RunStarted{RunID: "r", Snapshot: snap, SnapshotHash: "sha256:x"},
		&polyloop.ModelCallIntent{Step: 1, CallID: "m1.1", Attempt: 1},
		&polyloop.ModelCallResult{Step: 1, CallID: "m1.1", Attempt: 1, Reply: &polyloop.ModelReply{Text: "INVALID"}},
		&polyloop.StepCompleted{Step: 1, ModelCallID: "m1.1", Decision: polyloop.DecisionInvalid, Feedback: "f"},
	}
	log := polyloop.RunLog{RunID: "r"}
	for i, b := range append(bodies, tail...) {
		log.Records = append(log.Records, polyloop.Record{Seq: int64(i), Body: b})
	}
	return log
}

func op(step int, name string) *polyloop.MaintenanceOp {
	return &polyloop.MaintenanceOp{Step: step, Name: name, Outcome: polyloop.OpDone, Value: json.RawMessage(`1`)}
}

func failedOp(step int, name string) *polyloop.MaintenanceOp {
	return &polyloop.MaintenanceOp{Step: step, Name: name, Outcome: polyloop.OpFailed, Failure: &diag.Diagnostic{Message: "conflict"}, Receivable: true}
}

func receivedOp(step int, name string) *polyloop.MaintenanceOp {
	return &polyloop.MaintenanceOp{Step: step, Name: name, Outcome: polyloop.OpReceived, Value: json.RawMessage(`{"conflict":true}`), Failure: &diag.Diagnostic{Message: "conflict"}}
}

func override() *polyloop.ConfigOverride {
	snap := polyloop.Snapshot{Agent: "a", Task: polyloop.Task{Input: "x"}, Memory: &polyloop.MemorySnapshot{Maintainer: &polyloop.Component{Name: "m2"}}}
	return &polyloop.ConfigOverride{PreviousHash: "sha256:x", SnapshotHash: "sha256:y", Fields: []string{"memory.maintainer"}, Snapshot: snap}
}

// The grammar of a step's maintenance: its records lie between the step's
// record and the next step (or the finish), each operation once, and the
// next step waits for maintenance_done.
func TestMaintenanceGrammar(t *testing.T) {
	intent2 := &polyloop.ModelCallIntent{Step: 2, CallID: "m2.1", Attempt: 1}
	for _, tc := range []struct {
		name    string
		log     polyloop.RunLog
		corrupt string // a part of the reason; "" when valid
	}{
		{"complete", maintLog(true, op(1, "a"), &polyloop.MaintenanceDone{Step: 1}, intent2), ""},
		{"intent while open", maintLog(true, op(1, "a"), intent2), "maintenance is open"},
		{"finish while open", maintLog(true, op(1, "a"), &polyloop.RunFinished{StopReason: polyloop.StopMaxSteps}), "maintenance is open"},
		{"operation twice", maintLog(true, op(1, "a"), op(1, "a")), "recorded twice"},
		{"another step", maintLog(true, op(2, "a")), "outside that step's maintenance"},
		{"after done", maintLog(true, &polyloop.MaintenanceDone{Step: 1}, op(1, "a")), "after its maintenance_done"},
		{"done twice", maintLog(true, &polyloop.MaintenanceDone{Step: 1}, &polyloop.MaintenanceDone{Step: 1}), "after its maintenance_done"},
		{"in the next step", maintLog(true, &polyloop.MaintenanceDone{Step: 1}, intent2, op(2, "a")), "outside that step's maintenance"},
		{"reception", maintLog(true, &polyloop.ChildReception{Step: 1, Index: 1, ChildRunID: "r/1~1", StopReason: polyloop.StopCompleted,
			Reception: polyloop.ReceptionAccepted, Maintenance: true}, &polyloop.MaintenanceDone{Step: 1}), ""},
		{"failed without failure", maintLog(true, &polyloop.MaintenanceOp{Step: 1, Name: "a", Outcome: polyloop.OpFailed}), "failed needs a failure"},
		{"done without value", maintLog(true, &polyloop.MaintenanceOp{Step: 1, Name: "a", Outcome: polyloop.OpDone}), "without a value"},
		// A failure no policy received is received once more after a
		// configuration change, and only then (design 0039).
		{"failed, then received after an override", maintLog(true, failedOp(1, "a"), override(), receivedOp(1, "a"), &polyloop.MaintenanceDone{Step: 1}), ""},
		{"failed, then received without an override", maintLog(true, failedOp(1, "a"), receivedOp(1, "a")), "recorded twice"},
		{"received twice after one override", maintLog(true, failedOp(1, "a"), override(), receivedOp(1, "a"), receivedOp(1, "a")), "recorded twice"},
		{"done, then again after an override", maintLog(true, op(1, "a"), override(), op(1, "a")), "recorded twice"},
		{"override before the failure", maintLog(true, override(), failedOp(1, "a"), receivedOp(1, "a")), "recorded twice"},
		{"receivable done", maintLog(true, &polyloop.MaintenanceOp{Step: 1, Name: "a", Outcome: polyloop.OpDone, Value: json.RawMessage(`1`), Receivable: true}), "receivable"},
		{"unknown outcome", maintLog(true, &polyloop.MaintenanceOp{Step: 1, Name: "a", Outcome: "maybe", Value: json.RawMessage(`1`),
			Failure: &diag.Diagnostic{Message: "x"}}), "unknown outcome"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := polyloop.PlanResume(tc.log)
			switch {
			case tc.corrupt == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.corrupt != "" && (!errors.Is(err, polyloop.ErrCorruptLog) || !strings.Contains(err.Error(), tc.corrupt)):
				t.Fatalf("err = %v, want a corrupt log saying %q", err, tc.corrupt)
			}
		})
	}
}

// The plan of a log whose last step waits for its maintenance is to
// maintain it — when the snapshot in force has a maintainer.
func TestPlanMaintain(t *testing.T) {
	for _, tc := range []struct {
		name string
		log  polyloop.RunLog
		want polyloop.PlanAction
	}{
		{"no maintenance yet", maintLog(true), polyloop.PlanMaintain},
		{"maintenance open", maintLog(true, op(1, "a")), polyloop.PlanMaintain},
		{"maintenance done", maintLog(true, op(1, "a"), &polyloop.MaintenanceDone{Step: 1}), polyloop.PlanStartStep},
		{"no maintainer", maintLog(false), polyloop.PlanStartStep},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := polyloop.PlanResume(tc.log)
			if err != nil || p.Action != tc.want {
				t.Fatalf("plan %+v, %v; want %s", p, err, tc.want)
			}
		})
	}
}

// A fork copies the facts of the steps it keeps, their maintenance
// included: the fork does not maintain a copied step again. A step whose
// maintenance is open cannot be forked at.
func TestForkCopiesMaintenance(t *testing.T) {
	store := memstore.New()
	v := newStepView()
	ran := &counter{}
	agent := memoryAgent(v, viewMaintainer(v, ran))
	r := newRunner(memoryScript(), store, newTestExec())
	if _, err := r.Run(context.Background(), "src", agent, polyloop.Task{Input: "task"}); err != nil {
		t.Fatal(err)
	}
	ran.reset()
	fr := newRunner(scriptmodel.New(call(1, "echo", map[string]string{"text": "one"}), scriptmodel.Reply("INVALID: think again"), scriptmodel.Reply("forked answer")), store, newTestExec())
	if _, err := fr.Fork(context.Background(), "src", 2, "fork", agent); err != nil {
		t.Fatal(err)
	}
	if ran.get("view/1") != 0 || ran.get("view/2") != 0 || ran.get("view/3") != 1 {
		t.Fatalf("maintenance ran %v in the fork, want only step 3", ran.n)
	}
	src, _ := polyloop.ReadLog(context.Background(), store, "src")
	cut := memstore.New()
	cut.Put("src", src.Records[:6]) // step 1's operation, no maintenance_done
	fr.Store = cut
	if _, err := fr.Fork(context.Background(), "src", 1, "fork2", agent); !errors.Is(err, polyloop.ErrForkPoint) {
		t.Fatalf("fork at an open maintenance: %v", err)
	}
}
