package polylooptest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

func TestFaultyStoreFailAppend(t *testing.T) {
	ctx := context.Background()
	inner := newGoodStore()
	s := &FaultyStore{Store: inner, FailAppend: 2}
	if err := polyloop.AppendRecords(ctx, s, "r", intents(0, 1, "a")...); err != nil {
		t.Fatal(err)
	}
	if err := polyloop.AppendRecords(ctx, s, "r", intents(1, 1, "a")...); !errors.Is(err, ErrInjected) {
		t.Fatalf("append 2: %v, want ErrInjected", err)
	}
	if log, _ := polyloop.ReadLog(ctx, inner, "r"); len(log.Records) != 1 {
		t.Fatalf("the failed append reached the store: %d records", len(log.Records))
	}
	if err := polyloop.AppendRecords(ctx, s, "r", intents(1, 1, "a")...); err != nil {
		t.Fatalf("append 3: %v", err)
	}
}

func TestFaultyStoreLoseAck(t *testing.T) {
	ctx := context.Background()
	inner := newGoodStore()
	s := &FaultyStore{Store: inner, FailAppend: 1, LoseAck: true}
	if err := polyloop.AppendRecords(ctx, s, "r", intents(0, 2, "a")...); !errors.Is(err, ErrInjected) {
		t.Fatalf("append: %v, want ErrInjected", err)
	}
	if log, _ := polyloop.ReadLog(ctx, inner, "r"); len(log.Records) != 2 {
		t.Fatalf("a lost acknowledgement must follow a commit: %d records", len(log.Records))
	}
}

func TestFaultyStoreCrash(t *testing.T) {
	ctx := context.Background()
	inner := newGoodStore()
	s := &FaultyStore{Store: inner, CrashAfter: 3}
	if err := polyloop.AppendRecords(ctx, s, "r", intents(0, 2, "a")...); err != nil {
		t.Fatal(err)
	}
	if err := polyloop.AppendRecords(ctx, s, "r", intents(2, 2, "a")...); !errors.Is(err, ErrCrashed) || !errors.Is(err, ErrInjected) {
		t.Fatalf("append past the crash point: %v, want ErrCrashed", err)
	}
	if err := polyloop.AppendRecords(ctx, s, "other", intents(0, 1, "a")...); !errors.Is(err, ErrCrashed) {
		t.Fatalf("append after the crash: %v, want ErrCrashed", err)
	}
	if log, _ := polyloop.ReadLog(ctx, s, "r"); len(log.Records) != 2 || !s.Crashed() || s.Records() != 2 || s.Appends() != 3 {
		t.Fatalf("after the crash: %d records readable, crashed %v, records %d, appends %d", len(log.Records), s.Crashed(), s.Records(), s.Appends())
	}
}

func TestFaultyStoreFailRead(t *testing.T) {
	s := &FaultyStore{Store: newGoodStore(), FailRead: 1}
	if _, err := polyloop.ReadLog(context.Background(), s, "r"); !errors.Is(err, ErrInjected) {
		t.Fatalf("read 1: %v", err)
	}
	if _, err := polyloop.ReadLog(context.Background(), s, "r"); err != nil {
		t.Fatalf("read 2: %v", err)
	}
}

// A FaultyStore over a good store is still a good store until its fault.
func TestFaultyStorePassesTheKitWithoutFaults(t *testing.T) {
	TestStore(t, StoreHarness{
		New:  func(testing.TB) polyloop.Store { return &FaultyStore{Store: newGoodStore()} },
		Skip: map[string]string{"ListRuns": "FaultyStore does not forward RunLister"},
	})
}

func TestFaultyModel(t *testing.T) {
	m := &FaultyModel{Model: goodModel{}, FailOn: 2}
	req := DefaultRequest()
	if _, err := m.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Complete(context.Background(), req); !errors.Is(err, ErrInjected) {
		t.Fatalf("call 2: %v", err)
	}
	if _, err := m.Complete(context.Background(), req); err != nil || m.Calls() != 3 {
		t.Fatalf("call 3: %v, calls %d", err, m.Calls())
	}
	custom := errors.New("http 503")
	m = &FaultyModel{Model: goodModel{}, FailOn: 1, Err: custom}
	if _, err := m.Complete(context.Background(), req); err != custom {
		t.Fatalf("custom error: %v", err)
	}
}

// describedModel has a snapshot identity.
type describedModel struct{ goodModel }

func (describedModel) Describe() polyloop.Component { return polyloop.Component{Name: "described"} }

func TestWrappersKeepTheSnapshotIdentity(t *testing.T) {
	if got := (&FaultyModel{Model: describedModel{}}).Describe().Name; got != "described" {
		t.Errorf("FaultyModel over a Describer: %q", got)
	}
	if got := (&FaultyModel{Model: goodModel{}}).Describe().Name; got != "polylooptest.goodModel" {
		t.Errorf("FaultyModel over a plain client: %q, want the client's type name", got)
	}
	if got := (&HangingExecutor{Executor: goodExecutor{}, Tool: "x"}).Describe().Name; got != "polylooptest.goodExecutor" {
		t.Errorf("HangingExecutor: %q", got)
	}
	// The identity is polyloop.Describe's, the one rule of the snapshot.
	for _, m := range []polyloop.ModelClient{describedModel{}, goodModel{}} {
		if got, want := (&FaultyModel{Model: m}).Describe(), polyloop.Describe(m); got.Name != want.Name || string(got.Config) != string(want.Config) {
			t.Errorf("FaultyModel over %T: %+v, polyloop.Describe gives %+v", m, got, want)
		}
	}
}

func TestHangingExecutor(t *testing.T) {
	x := &HangingExecutor{Executor: goodExecutor{}, Tool: "sleepy"}
	out, err := x.Execute(context.Background(), goodExecutorHarness().Succeeds)
	if err != nil || out.Status != polyloop.Executed {
		t.Fatalf("a tool that does not hang: %+v %v", out, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-x.Started(); cancel() }()
	if _, err := x.Execute(ctx, polyloop.Action{Tool: "sleepy"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("hanging action: %v", err)
	}
}

// The fakes that stand for correct behaviour pass the kit themselves.
func TestHangingFakesPassTheKit(t *testing.T) {
	h := goodExecutorHarness()
	h.New = func(testing.TB) polyloop.ActionExecutor {
		return &HangingExecutor{Executor: goodExecutor{}, Tool: "sleep"}
	}
	TestActionExecutor(t, h)
	m := goodModelHarness()
	m.NewHanging = func(testing.TB) polyloop.ModelClient { return &HangingModel{} }
	TestModelClient(t, m)
}

func TestFaultySink(t *testing.T) {
	ctx := context.Background()
	ev := polyloop.Event{Kind: polyloop.EventStepStarted}
	s := &FaultySink{FailFrom: 2, FailCount: 2, HangOn: 5}
	want := []bool{true, false, false, true}
	for i, ok := range want {
		if err := s.Emit(ctx, ev); (err == nil) != ok || (err != nil && !errors.Is(err, ErrInjected)) {
			t.Fatalf("call %d: %v, want success %v", i+1, err, ok)
		}
	}
	hctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := s.Emit(hctx, ev); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hanging call: %v", err)
	}
	if n := len(s.Events()); n != 2 || s.Calls() != 5 {
		t.Fatalf("%d events delivered, %d calls", n, s.Calls())
	}
	p := &FaultySink{PanicOn: 1}
	defer func() {
		if recover() == nil {
			t.Error("PanicOn did not panic")
		}
	}()
	_ = p.Emit(ctx, ev)
}

func TestFaultySinkPassesTheKit(t *testing.T) {
	TestEventSink(t, SinkHarness{
		New:        func(testing.TB) polyloop.EventSink { return &FaultySink{} },
		NewFailing: func(testing.TB) polyloop.EventSink { return &FaultySink{FailFrom: 1} },
	})
}
