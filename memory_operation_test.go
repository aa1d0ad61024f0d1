package polyloop_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
)

// oneStep is a run of one final step whose maintenance performs op.
func oneStep(t *testing.T, store *memstore.Store, m *funcMaintainer) (polyloop.Agent, *polyloop.Runner) {
	t.Helper()
	agent := testAgent()
	agent.Memory = &polyloop.AgentMemory{Maintainer: m}
	return agent, newRunner(scriptmodel.New(scriptmodel.Reply("done")), store, newTestExec())
}

func opsOf(t *testing.T, store *memstore.Store) []*polyloop.MaintenanceOp {
	t.Helper()
	log, _ := polyloop.ReadLog(context.Background(), store, "r")
	return bodiesOf[*polyloop.MaintenanceOp](log)
}

// A failure the Failed handler receives is recorded "received" with the
// handler's value and the failure; the maintenance goes on.
func TestPerformReceived(t *testing.T) {
	store := memstore.New()
	stale := errors.New("stale basis")
	m := &funcMaintainer{fn: func(ctx context.Context, s polyloop.MaintainedStep) error {
		v, err := polyloop.Perform(ctx, polyloop.Operation[string]{Name: "memory",
			Do:     func(context.Context) (string, error) { return "", stale },
			Failed: func(err error) (string, error) { return "skipped: " + err.Error(), nil }})
		if err != nil || v != "skipped: stale basis" {
			t.Errorf("Perform = %q, %v", v, err)
		}
		return err
	}}
	agent, r := oneStep(t, store, m)
	if _, err := r.Run(context.Background(), "r", agent, polyloop.Task{Input: "x"}); err != nil {
		t.Fatal(err)
	}
	ops := opsOf(t, store)
	if len(ops) != 1 || ops[0].Outcome != polyloop.OpReceived || ops[0].Failure.Message != "stale basis" || string(ops[0].Value) != `"skipped: stale basis"` {
		t.Fatalf("ops %+v", ops)
	}
}

// A failure no one receives is recorded "failed" and propagates as an
// *OperationError; a resume meets the record, returns the same error text
// and does not perform the operation again.
func TestPerformFailedNotReceived(t *testing.T) {
	store := memstore.New()
	stale := errors.New("stale basis")
	did := 0
	m := &funcMaintainer{fn: func(ctx context.Context, s polyloop.MaintainedStep) error {
		_, err := polyloop.Perform(ctx, polyloop.Operation[string]{Name: "memory",
			Do: func(context.Context) (string, error) { did++; return "", stale }})
		return err
	}}
	agent, r := oneStep(t, store, m)
	_, err := r.Run(context.Background(), "r", agent, polyloop.Task{Input: "x"})
	var oe *polyloop.OperationError
	if !errors.As(err, &oe) || !errors.Is(err, stale) {
		t.Fatalf("err = %v, want an OperationError wrapping the failure", err)
	}
	first := err.Error()
	if ops := opsOf(t, store); len(ops) != 1 || ops[0].Outcome != polyloop.OpFailed {
		t.Fatalf("ops %+v", ops)
	}
	_, err = r.Resume(context.Background(), "r", agent)
	if !errors.As(err, &oe) || err.Error() != first || errors.Is(err, stale) {
		t.Fatalf("resume: %v, want the recorded failure %q (without its cause)", err, first)
	}
	if did != 1 {
		t.Fatalf("the operation ran %d times", did)
	}
}

// An effect established and not published: recorded "unpublished" with the
// value, the PublicationError propagates (it must), and a resume reuses the
// value and goes on: nothing is performed or published again.
func TestPerformUnpublished(t *testing.T) {
	store := memstore.New()
	did, after := 0, 0
	m := &funcMaintainer{fn: func(ctx context.Context, s polyloop.MaintainedStep) error {
		v, err := polyloop.Perform(ctx, polyloop.Operation[int]{Name: "memory",
			Do: func(context.Context) (int, error) {
				did++
				return 7, &polyloop.PublicationError{Op: "memory commit", Err: errors.New("bus down")}
			},
			Failed: func(error) (int, error) { t.Error("Failed received a publication failure"); return 0, nil }})
		if err != nil {
			return err
		}
		if v != 7 {
			t.Errorf("reused value %d", v)
		}
		after++
		return nil
	}}
	agent, r := oneStep(t, store, m)
	_, err := r.Run(context.Background(), "r", agent, polyloop.Task{Input: "x"})
	var pub *polyloop.PublicationError
	if !errors.As(err, &pub) || !polyloop.MustPropagate(err) {
		t.Fatalf("err = %v, want the PublicationError", err)
	}
	ops := opsOf(t, store)
	if len(ops) != 1 || ops[0].Outcome != polyloop.OpUnpublished || string(ops[0].Value) != "7" || !strings.Contains(ops[0].Failure.Message, "bus down") {
		t.Fatalf("ops %+v", ops)
	}
	if res, err := r.Resume(context.Background(), "r", agent); err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("resume: %+v, %v", res, err)
	}
	if did != 1 || after != 1 {
		t.Fatalf("performed %d times, went on %d times", did, after)
	}
}

// An error that must propagate — a persistence failure, a cancellation — is
// never received and never recorded: a resume performs the operation again.
func TestPerformMustPropagate(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  func(cancel func()) error
		is   error
	}{
		{"persistence", func(func()) error { return &polyloop.PersistenceError{Op: "memory commit", Err: errors.New("lost")} }, nil},
		{"cancel", func(cancel func()) error { cancel(); return context.Canceled }, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := memstore.New()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			did := 0
			m := &funcMaintainer{fn: func(mctx context.Context, s polyloop.MaintainedStep) error {
				_, err := polyloop.Perform(mctx, polyloop.Operation[int]{Name: "memory",
					Do: func(context.Context) (int, error) {
						did++
						if did == 1 {
							return 0, tc.err(cancel)
						}
						return 1, nil
					},
					Failed: func(error) (int, error) { t.Error("Failed received an error that must propagate"); return 0, nil }})
				return err
			}}
			agent, r := oneStep(t, store, m)
			_, err := r.Run(ctx, "r", agent, polyloop.Task{Input: "x"})
			var pe *polyloop.PersistenceError
			if (tc.is == nil && !errors.As(err, &pe)) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("err = %v", err)
			}
			if ops := opsOf(t, store); len(ops) != 0 {
				t.Fatalf("recorded %+v", ops)
			}
			if _, err := r.Resume(context.Background(), "r", agent); err != nil {
				t.Fatal(err)
			}
			if did != 2 {
				t.Fatalf("performed %d times, want 2", did)
			}
		})
	}
}

// Perform belongs to a step's maintenance: not to an action, nor outside a
// run; InvokeChild in a maintenance is not an action either.
func TestPerformOutsideMaintenance(t *testing.T) {
	op := polyloop.Operation[int]{Name: "x", Do: func(context.Context) (int, error) { return 1, nil }}
	if _, err := polyloop.Perform(context.Background(), op); !errors.Is(err, polyloop.ErrNotInMaintenance) {
		t.Fatalf("outside a run: %v", err)
	}
	exec := &delegateExec{env: newTestExec(), invoke: func(ctx context.Context) (string, error) {
		_, err := polyloop.Perform(ctx, op)
		return "", err
	}}
	_, err := newRunner(scriptmodel.New(call(1, "delegate", nil)), memstore.New(), exec).Run(context.Background(), "r", parentAgent(), polyloop.Task{Input: "x"})
	if !errors.Is(err, polyloop.ErrNotInMaintenance) {
		t.Fatalf("in an action: %v", err)
	}
	m := &funcMaintainer{fn: func(ctx context.Context, s polyloop.MaintainedStep) error {
		if _, ok := polyloop.ActionFromContext(ctx); ok {
			t.Error("the maintenance is seen as an action")
		}
		if _, err := polyloop.Perform(ctx, op); err != nil {
			return err
		}
		_, err := polyloop.Perform(ctx, op)
		return err
	}}
	agent, r := oneStep(t, memstore.New(), m)
	if _, err := r.Run(context.Background(), "r", agent, polyloop.Task{Input: "x"}); !errors.Is(err, polyloop.ErrInvalidConfig) {
		t.Fatalf("an operation name used twice: %v", err)
	}
}

// A maintenance may invoke a child: its id is the maintenance form, its
// reception is recorded with maintenance set, and a resume reuses it
// without running the handler again.
func TestMaintenanceInvokesChild(t *testing.T) {
	store := memstore.New()
	handled := 0
	child := polyloop.Child{Runner: newRunner(scriptmodel.New(scriptmodel.Reply("proposal")), store, newTestExec()),
		Agent: childAgent(), Key: "proposal.1"}
	fail := true
	m := &funcMaintainer{fn: func(ctx context.Context, s polyloop.MaintainedStep) error {
		v, err := polyloop.InvokeChild(ctx, child, polyloop.Task{Input: "propose"}, polyloop.Receive[string]{
			Succeeded: func(r polyloop.RunResult) (string, error) { handled++; return r.FinalAnswer, nil }})
		if err != nil || v != "proposal" {
			t.Errorf("InvokeChild = %q, %v", v, err)
		}
		if fail {
			return errors.New("later failure")
		}
		return nil
	}}
	agent, r := oneStep(t, store, m)
	if _, err := r.Run(context.Background(), "r", agent, polyloop.Task{Input: "x"}); err == nil {
		t.Fatal("no error")
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "r")
	recs := bodiesOf[*polyloop.ChildReception](log)
	if len(recs) != 1 || !recs[0].Maintenance || recs[0].ChildRunID != "r/1~:proposal.1" || recs[0].Step != 1 {
		t.Fatalf("receptions %+v", recs)
	}
	childLog, _ := polyloop.ReadLog(context.Background(), store, "r/1~:proposal.1")
	if p := childLog.Started().Parent; p == nil || !p.Maintenance || p.Step != 1 {
		t.Fatalf("child's parent %+v", p)
	}
	fail = false
	if _, err := r.Resume(context.Background(), "r", agent); err != nil {
		t.Fatal(err)
	}
	if handled != 1 {
		t.Fatalf("the handler ran %d times", handled)
	}
}
