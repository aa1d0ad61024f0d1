package polyloop_test

import (
	"context"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
)

// Every entry point opens a run one way: a fork that takes a dead holder's
// lease on its new id records the take-over, as Run and Resume do, after
// the records it copies (which are its source's, seq for seq).
func TestForkRecordsTheTakeOver(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	if _, err := newRunner(referenceScript(), store, newTestExec()).Run(ctx, "ref", equivalenceAgent(), polyloop.Task{Input: "reference task"}); err != nil {
		t.Fatal(err)
	}
	dead := takeLease(t, store, "fork", "tok-dead")
	store.AbandonLease(dead)
	res, err := newRunner(referenceScript(), store, newTestExec()).Fork(ctx, "ref", 2, "fork", equivalenceAgent())
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("Fork: %+v, %v", res, err)
	}
	tk := takeovers(t, store, "fork")
	if len(tk) != 1 || tk[0].Reason != polyloop.TakeoverHolderDead || tk[0].From.Token != "tok-dead" || tk[0].To.Token == "" {
		t.Fatalf("the fork's take-over records: %+v, want the dead holder's", tk)
	}
	log, _ := polyloop.ReadLog(ctx, store, "fork")
	copied := log.Started().ForkedFrom.Copied
	if k := log.Records[copied+1].Kind(); k != polyloop.KindLeaseTakeover {
		t.Fatalf("record %d after the %d copies is %s, want the take-over", copied+1, copied, k)
	}
}

// Every record goes through the driver's one write path and reaches the
// sinks: Approve's and Deliver's answers are gate_answered events of the
// Runner that wrote them, once their records are durable.
func TestGateAnswersReachTheSinks(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	res, err := newRunner(gateScript(), store, newTestExec()).Run(ctx, "g", gateAgent(), polyloop.Task{Input: "t"})
	if err != nil || res.Suspended == nil || len(res.Suspended.Approvals) != 2 {
		t.Fatalf("Run: %+v, %v; want the run suspended on two approvals", res, err)
	}
	sink := &collectSink{}
	r := newRunner(gateScript(), store, newTestExec())
	r.Sinks = []polyloop.EventSink{sink}
	first := res.Suspended.Approvals[0]
	if err := r.Approve(ctx, "g", first.ActionID, polyloop.ApprovalDecision{Allow: true, By: "ana"}); err != nil {
		t.Fatal(err)
	}
	log, _ := polyloop.ReadLog(ctx, store, "g")
	last := log.Records[len(log.Records)-1]
	if len(sink.events) != 1 {
		t.Fatalf("Approve emitted %d events, want one gate_answered: %+v", len(sink.events), sink.events)
	}
	ev := sink.events[0]
	decided, ok := ev.Answer.(*polyloop.ApprovalDecided)
	if ev.Kind != polyloop.EventGateAnswered || ev.RunID != "g" || ev.Seq != last.Seq || ev.ActionID != first.ActionID ||
		ev.Gate != polyloop.KindApprovalRequested || !ok || !decided.Allow || decided.By != "ana" || ev.Agent != gateAgent().Name {
		t.Fatalf("Approve's event %+v, want gate_answered of record %d (%s)", ev, last.Seq, last.Kind())
	}
}
