package polyloop_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
)

type collectSink struct {
	mu     sync.Mutex
	events []polyloop.Event
}

func (s *collectSink) Emit(_ context.Context, ev polyloop.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, ev)
	return nil
}

type failSink struct{ calls int }

func (s *failSink) Emit(context.Context, polyloop.Event) error {
	s.calls++
	return errors.New("sink down")
}

type panicSink struct{ calls int }

func (s *panicSink) Emit(context.Context, polyloop.Event) error {
	s.calls++
	panic("sink bug")
}

// blockSink ignores its context and blocks until release is closed: the
// runner's own timer must get the loop going again.
type blockSink struct{ release chan struct{} }

func (b blockSink) Emit(context.Context, polyloop.Event) error {
	<-b.release
	return nil
}

func threeStepModel() *scriptmodel.Client {
	return scriptmodel.New(call(1, "echo", map[string]string{"text": "a"}), call(2, "echo", map[string]string{"text": "b"}), scriptmodel.Reply("end"))
}

// SPEC §3.5: a failing and a panicking sink never stop the loop; they are
// disabled past their limits and counted in the result and in RunFinished.
func TestSinkFailuresAreCounted(t *testing.T) {
	store := memstore.New()
	fail, pan, good := &failSink{}, &panicSink{}, &collectSink{}
	r := newRunner(threeStepModel(), store, newTestExec())
	r.Sinks = []polyloop.EventSink{fail, pan, good}
	res, err := r.Run(context.Background(), "r1", testAgent(), polyloop.Task{Input: "go"})
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	if fail.calls != 3 || pan.calls != 1 {
		t.Fatalf("failing sink called %d times (want 3, then disabled), panicking %d (want 1)", fail.calls, pan.calls)
	}
	want := map[int]polyloop.SinkReport{
		0: {Index: 0, Errors: 3, Disabled: true},
		1: {Index: 1, Panics: 1, Disabled: true},
	}
	if len(res.Sinks) != 2 {
		t.Fatalf("sink reports %+v", res.Sinks)
	}
	for _, rep := range res.Sinks {
		w := want[rep.Index]
		if rep.Errors != w.Errors || rep.Panics != w.Panics || rep.Disabled != w.Disabled || rep.LastFailure == "" {
			t.Fatalf("report %+v, want %+v", rep, w)
		}
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "r1")
	if fin := log.Finished(); len(fin.Sinks) != 2 {
		t.Fatalf("RunFinished sinks %+v", fin.Sinks)
	}
	// The healthy sink saw every event, in log order, each after its record.
	var lastSeq int64 = -1
	for _, ev := range good.events {
		if ev.Seq < lastSeq || ev.Seq >= int64(len(log.Records)) {
			t.Fatalf("event %s seq %d out of order or beyond the log", ev.Kind, ev.Seq)
		}
		lastSeq = ev.Seq
	}
	if good.events[len(good.events)-1].Kind != polyloop.EventRunFinished {
		t.Fatal("run_finished event missing")
	}
}

// A sink that blocks forever stalls the loop no longer than the timeout.
func TestSinkTimeout(t *testing.T) {
	r := newRunner(threeStepModel(), memstore.New(), newTestExec())
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	r.Sinks = []polyloop.EventSink{blockSink{release}}
	r.SinkPolicy = polyloop.SinkPolicy{Timeout: 10 * time.Millisecond}
	done := make(chan struct{})
	var res polyloop.RunResult
	var err error
	go func() {
		res, err = r.Run(context.Background(), "r1", testAgent(), polyloop.Task{Input: "go"})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a blocking sink stalled the loop")
	}
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	if len(res.Sinks) != 1 || res.Sinks[0].Timeouts != 3 || !res.Sinks[0].Disabled {
		t.Fatalf("reports %+v: want 3 timeouts then disabled", res.Sinks)
	}
}

// Events are emitted only for durable records: a store failure emits nothing
// for the records it did not write.
func TestNoEventForUnwrittenRecord(t *testing.T) {
	store := memstore.NewWithOptions(memstore.Options{FailAppend: 2})
	sink := &collectSink{}
	r := newRunner(threeStepModel(), store, newTestExec())
	r.Sinks = []polyloop.EventSink{sink}
	_, err := r.Run(context.Background(), "r1", testAgent(), polyloop.Task{Input: "go"})
	var pe *polyloop.PersistenceError
	if !errors.As(err, &pe) {
		t.Fatal(err)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "r1")
	for _, ev := range sink.events {
		if ev.Seq >= int64(len(log.Records)) {
			t.Fatalf("event %s for seq %d, but the log has %d records", ev.Kind, ev.Seq, len(log.Records))
		}
	}
	if len(sink.events) == 0 {
		t.Fatal("no events for the durable records")
	}
}

// A sink's failure text stays out of the log (it could hold anything); the
// counts are recorded, and the text is in the result.
func TestSinkFailureTextNotRecorded(t *testing.T) {
	store := memstore.New()
	r := newRunner(threeStepModel(), store, newTestExec())
	r.Sinks = []polyloop.EventSink{&failSink{}}
	res, err := r.Run(context.Background(), "r1", testAgent(), polyloop.Task{Input: "go"})
	if err != nil || len(res.Sinks) != 1 || res.Sinks[0].LastFailure == "" {
		t.Fatalf("%+v %v", res, err)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "r1")
	fin := log.Finished()
	if len(fin.Sinks) != 1 || fin.Sinks[0].Errors != 3 || fin.Sinks[0].LastFailure != "" {
		t.Fatalf("recorded sinks %+v", fin.Sinks)
	}
}

// Events of a resumed run: run_resumed carries the configuration the log
// holds (the override is its own event), and the events of a replayed
// action carry its attempt.
func TestResumeEvents(t *testing.T) {
	store := memstore.NewWithOptions(memstore.Options{CrashAfter: 4}) // dies after step 1's action intent
	model := scriptmodel.New(call(1, "echo", map[string]string{"text": "a"}), scriptmodel.Reply("end"))
	if _, err := newRunner(model, store, newTestExec()).Run(context.Background(), "r1", testAgent(), polyloop.Task{Input: "go"}); err == nil {
		t.Fatal("no crash")
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "r1")
	_, storedHash := log.Snapshot()
	store.SetFaults(memstore.Options{})
	sink := &collectSink{}
	r := newRunner(model, store, newTestExec())
	r.Sinks = []polyloop.EventSink{sink}
	changed := testAgent()
	changed.System = "changed"
	if _, err := r.ResumeWith(context.Background(), "r1", changed, polyloop.ResumeOptions{AllowConfigChange: true}); err != nil {
		t.Fatal(err)
	}
	byKind := map[polyloop.EventKind]polyloop.Event{}
	for _, ev := range sink.events {
		byKind[ev.Kind] = ev
	}
	if ev := byKind[polyloop.EventRunResumed]; ev.SnapshotHash != storedHash || ev.Plan.Action != polyloop.PlanReplayAction {
		t.Fatalf("run_resumed %+v", ev)
	}
	if ev := byKind[polyloop.EventConfigOverridden]; ev.SnapshotHash == storedHash || ev.Override == nil {
		t.Fatalf("config_overridden %+v", ev)
	}
	if a, f := byKind[polyloop.EventActionStarted], byKind[polyloop.EventActionFinished]; a.Attempt != 2 || f.Attempt != 2 {
		t.Fatalf("attempts: action_started %d, action_finished %d", a.Attempt, f.Attempt)
	}
	if ev := byKind[polyloop.EventModelCallFinished]; ev.Attempt != 1 {
		t.Fatalf("model_call_finished attempt %d", ev.Attempt)
	}
}
