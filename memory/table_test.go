package memory_test

// One test per row of the third seed's table "多实体维护中的失败" (failures in
// multi-entity maintenance), design record 0020: after the assistant's
// message is established, a proposal (a child), Memory.Apply, then the
// View's adjustment; each commits only its own effect.

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memory"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/polylooptest"
)

func policies(proposal, conflict, view memory.Policy) memory.MaintainerOptions {
	return memory.MaintainerOptions{OnProposalFailure: proposal, OnConflict: conflict, OnViewRejected: view}
}

func mustFinish(t *testing.T, res polyloop.RunResult, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != polyloop.StopCompleted {
		t.Fatalf("stop %s", res.StopReason)
	}
}

func hasKind(log polyloop.RunLog, k polyloop.RecordKind) bool {
	for _, r := range log.Records {
		if r.Kind() == k {
			return true
		}
	}
	return false
}

// Row 1: the proposal child's ordinary model or content failure. The
// message stays, Memory is not written. With Skip the author skips it
// explicitly (the reception records it); with Fail — no receiver — it
// propagates. The kernel picks neither.
func TestTableProposalFailure(t *testing.T) {
	for _, tc := range []struct {
		name    string
		propose func(context.Context, int) (string, error)
		isFail  func(error) bool
	}{
		{"model failure", func(context.Context, int) (string, error) { return "", errors.New("503 overloaded") },
			func(err error) bool { _, ok := polyloop.AsChildFailure(err); return ok }},
		{"content rejection", func(context.Context, int) (string, error) { return "I would rather not.", nil },
			func(err error) bool {
				var re *polyloop.ReceptionError
				return errors.As(err, &re) && !polyloop.MustPropagate(err)
			}},
	} {
		t.Run(tc.name+"/skip", func(t *testing.T) {
			w := newWorld(t, memstore.New(), policies(memory.Skip, memory.Fail, memory.Fail), oneFinal(), tc.propose)
			res, err := w.run(bg, "r")
			mustFinish(t, res, err)
			rec := w.receptions("r")["r/1~:proposal.1"]
			if rec == nil || rec.Reception != polyloop.ReceptionHandled || !strings.Contains(string(rec.Value), `"skipped":true`) {
				t.Fatalf("reception %+v", rec)
			}
			ops := w.ops("r")
			if ops["1/memory.1"] != nil || ops["1/view.1"] != nil || !hasKind(w.log("r"), polyloop.KindMaintenanceDone) {
				t.Fatalf("a skipped proposal went on: %v", ops)
			}
			if n, v := w.mem.Commits(); n != 0 || v != 0 {
				t.Fatalf("%d memory and %d view commits", n, v)
			}
		})
		t.Run(tc.name+"/fail", func(t *testing.T) {
			w := newWorld(t, memstore.New(), policies(memory.Fail, memory.Fail, memory.Fail), oneFinal(), tc.propose)
			_, err := w.run(bg, "r")
			if !tc.isFail(err) {
				t.Fatalf("err = %v", err)
			}
			log := w.log("r")
			if !hasKind(log, polyloop.KindStepCompleted) || hasKind(log, polyloop.KindMaintenanceDone) || w.ops("r")["1/memory.1"] != nil {
				t.Fatalf("kinds %v", log.Records)
			}
			if n, _ := w.mem.Commits(); n != 0 {
				t.Fatalf("%d commits", n)
			}
		})
	}
}

// Row 1's rider: a skipped proposal is not an empty batch. With the basis
// made stale by another writer while the proposer thinks, an empty proposal
// still meets the basis check (a conflict, received); a skipped one does
// not get that far.
func TestTableSkippedIsNotEmptyBatch(t *testing.T) {
	for _, answer := range []string{`{"memory": []}`, "no proposal"} {
		var w *world
		w = newWorld(t, memstore.New(), policies(memory.Skip, memory.Skip, memory.Skip), oneFinal(), func(ctx context.Context, step int) (string, error) {
			w.seed("other-run", "k", `"theirs"`) // another run writes what the proposer was shown absent... and shown
			return answer, nil
		})
		w.seed("seed", "k", `"mine"`)
		res, err := w.run(bg, "r")
		mustFinish(t, res, err)
		op := w.ops("r")["1/memory.1"]
		if answer == "no proposal" {
			if op != nil {
				t.Fatalf("skipped proposal: memory operation %+v", op)
			}
			continue
		}
		if op == nil || op.Outcome != polyloop.OpReceived || !strings.Contains(op.Failure.Message, "conflicts") {
			t.Fatalf("empty batch on a stale basis: %+v", op)
		}
	}
}

// Row 2: a stale Memory basis found before the commit. The proposal is not
// applied; other writes happened and stand. A receivable failure: Skip
// receives it; Fail propagates it (and a resume meets the recorded
// failure again, writing nothing); Regenerate makes a new proposal from a
// new, recorded basis — never the old proposal on the new basis.
func TestTableStaleMemoryBasis(t *testing.T) {
	setup := func(t *testing.T, p memory.Policy) *world {
		var w *world
		w = newWorld(t, memstore.New(), policies(memory.Fail, p, memory.Skip), oneFinal(), func(ctx context.Context, step int) (string, error) {
			if w.proposals.calls == 1 {
				w.seed("other-run", "k", `"theirs"`)
			}
			return putting("k", `"mine"`), nil
		})
		w.seed("seed", "k", `"first"`)
		return w
	}
	t.Run("skip", func(t *testing.T) {
		w := setup(t, memory.Skip)
		res, err := w.run(bg, "r")
		mustFinish(t, res, err)
		op := w.ops("r")["1/memory.1"]
		if op == nil || op.Outcome != polyloop.OpReceived || string(op.Value) != `{"conflict":true}` {
			t.Fatalf("memory operation %+v", op)
		}
		if h := w.history("k"); len(h) != 2 || string(h[1].Value) != `"theirs"` {
			t.Fatalf("history %+v: the other write must stand, the proposal must not", h)
		}
		if w.ops("r")["1/view.1"] == nil {
			t.Fatal("the failed branch covered the whole chain: no view operation")
		}
	})
	t.Run("fail", func(t *testing.T) {
		w := setup(t, memory.Fail)
		_, err := w.run(bg, "r")
		var oe *polyloop.OperationError
		var ce *memory.ConflictError
		if !errors.As(err, &oe) || !errors.As(err, &ce) || polyloop.MustPropagate(err) {
			t.Fatalf("err = %v, want the unreceived conflict", err)
		}
		commits, _ := w.mem.Commits()
		_, again := w.resume(bg, "r")
		if !errors.As(again, &oe) || again.Error() != err.Error() {
			t.Fatalf("resume: %v, want the recorded failure again", again)
		}
		if now, _ := w.mem.Commits(); now != commits || w.proposals.calls != 1 {
			t.Fatalf("the resume wrote (%d commits, was %d) or proposed again (%d)", now, commits, w.proposals.calls)
		}
	})
	t.Run("regenerate", func(t *testing.T) {
		w := setup(t, memory.Regenerate)
		res, err := w.run(bg, "r")
		mustFinish(t, res, err)
		ops := w.ops("r")
		if ops["1/memory.1"].Outcome != polyloop.OpReceived || ops["1/memory.2"].Outcome != polyloop.OpDone ||
			ops["1/memory.2"].WriteID != "r/1~memory.2" || ops["1/view.1"] != nil || ops["1/view.2"] == nil {
			t.Fatalf("operations %v", ops)
		}
		if !strings.Contains(string(ops["1/context.1"].Value), `"version":1`) || !strings.Contains(string(ops["1/context.2"].Value), `"version":2`) {
			t.Fatalf("the second proposal must be made from a new, recorded basis:\n%s\n%s", ops["1/context.1"].Value, ops["1/context.2"].Value)
		}
		if w.receptions("r")["r/1~:proposal.2"] == nil {
			t.Fatal("the second proposal is not a new child")
		}
		if h := w.history("k"); len(h) != 3 || string(h[2].Value) != `"mine"` {
			t.Fatalf("history %+v", h)
		}
	})
}

// Row 3: the Memory's persistent commit fails or breaks the port's
// contract. Nothing is installed; the external commit may be unknown. A
// PersistenceError — never received, even by a policy that receives
// conflicts, and never retried; the Memory refuses work until reloaded. A
// resume reloads, and the write issued again finds its own commit or
// commits: once.
func TestTableMemoryPersistenceFailure(t *testing.T) {
	for _, fault := range []polylooptest.MemoryFault{polylooptest.FailBefore, polylooptest.LoseAck, polylooptest.RefuseCAS, polylooptest.BreakContract} {
		for _, restart := range []bool{false, true} {
			w := newWorld(t, memstore.New(), policies(memory.Skip, memory.Skip, memory.Skip), oneFinal(), func(context.Context, int) (string, error) {
				return putting("k", `"v"`), nil
			})
			w.mem.FailCommit(1, fault)
			_, err := w.run(bg, "r")
			var pe *polyloop.PersistenceError
			if !errors.As(err, &pe) || memory.IsReceivable(err) {
				t.Fatalf("fault %d: err = %v, want a PersistenceError", fault, err)
			}
			if w.ops("r")["1/memory.1"] != nil || hasKind(w.log("r"), polyloop.KindMaintenanceDone) {
				t.Fatalf("fault %d: the failure was recorded as an outcome: %v", fault, w.ops("r"))
			}
			var rr *memory.ReloadRequiredError
			if _, _, err := w.memory.Get(bg, "notes", "k"); !errors.As(err, &rr) {
				t.Fatalf("fault %d: the Memory answers after the failure: %v", fault, err)
			}
			if n, v := w.mem.Commits(); n != 1 || v != 0 {
				t.Fatalf("fault %d: %d memory commits (a retry?), %d view commits", fault, n, v)
			}
			if restart {
				w.restart()
			}
			res, err := w.resume(bg, "r")
			mustFinish(t, res, err)
			if h := w.history("k"); len(h) != 1 || h[0].Provenance.WriteID != "r/1~memory.1" {
				t.Fatalf("fault %d: history %+v: the write must be committed once", fault, h)
			}
			if v := w.viewAt(); v.Version != 1 || len(v.Members) != 1 {
				t.Fatalf("fault %d: view %+v", fault, v)
			}
		}
	}
}

// Row 4: the publication the commit requires fails. The memory is
// established; the View has not changed. The fault is kept (it propagates,
// and the record says so); nothing is written again — the resume goes on
// with the View.
func TestTablePublicationFailure(t *testing.T) {
	w := newWorld(t, memstore.New(), policies(memory.Skip, memory.Skip, memory.Skip), oneFinal(), func(context.Context, int) (string, error) {
		return putting("k", `"v"`), nil
	})
	w.publish = func(context.Context, memory.Commit) error { return errors.New("bus down") }
	_, err := w.run(bg, "r")
	var pub *polyloop.PublicationError
	var pe *polyloop.PersistenceError
	if !errors.As(err, &pub) || errors.As(err, &pe) || !polyloop.MustPropagate(err) {
		t.Fatalf("err = %v, want the PublicationError", err)
	}
	op := w.ops("r")["1/memory.1"]
	if op == nil || op.Outcome != polyloop.OpUnpublished || !strings.Contains(op.Failure.Message, "bus down") {
		t.Fatalf("memory operation %+v", op)
	}
	if len(w.history("k")) != 1 || w.viewAt().Version != 0 || w.ops("r")["1/view.1"] != nil {
		t.Fatalf("after the failure: history %v, view %+v", w.history("k"), w.viewAt())
	}
	if e, ok, err := w.memory.Get(bg, "notes", "k"); err != nil || !ok || e.Version != 1 {
		t.Fatalf("the commit is not installed, or the Memory stopped: %+v %v %v", e, ok, err)
	}
	w.publish = nil
	res, err := w.resume(bg, "r")
	mustFinish(t, res, err)
	if len(w.history("k")) != 1 || w.published != 1 {
		t.Fatalf("written %d times, published %d times", len(w.history("k")), w.published)
	}
	if v := w.viewAt(); v.Version != 1 {
		t.Fatalf("view %+v", v)
	}
}

// Row 5: the View's pre-check rejects the adjustment (here: an entry from a
// namespace that is not one of its sources). Memory may be established —
// and stays; the View is not installed. Received or propagated by explicit
// policy.
func TestTableViewRejected(t *testing.T) {
	proposal := `{"memory": [{"op": "put", "namespace": "facts", "key": "f", "value": 1}], "view": {"include": [{"namespace": "facts", "key": "f"}]}}`
	for _, p := range []memory.Policy{memory.Skip, memory.Fail} {
		w := newWorld(t, memstore.New(), policies(memory.Fail, memory.Fail, p), oneFinal(), func(context.Context, int) (string, error) { return proposal, nil })
		res, err := w.run(bg, "r")
		op := w.ops("r")["1/view.1"]
		if p == memory.Skip {
			mustFinish(t, res, err)
			if op == nil || op.Outcome != polyloop.OpReceived || !strings.Contains(op.Failure.Message, "(source)") {
				t.Fatalf("view operation %+v", op)
			}
		} else {
			var re *memory.RejectionError
			if !errors.As(err, &re) || re.What != "source" || polyloop.MustPropagate(err) {
				t.Fatalf("err = %v", err)
			}
		}
		if h, _ := w.runs.EntryHistory(bg, "facts", "f"); len(h) != 1 {
			t.Fatalf("policy %q: the memory's effect was erased: %v", p, h)
		}
		if v := w.viewAt(); v.Version != 0 {
			t.Fatalf("policy %q: view %+v", p, v)
		}
	}
}

// Row 6: the View's persistent commit fails. The View is not installed; the
// external commit may be unknown. A PersistenceError; no automatic
// re-inclusion; Memory's commit stands. A resume reloads and the
// adjustment, issued again, commits or finds its own version.
func TestTableViewPersistenceFailure(t *testing.T) {
	for _, fault := range []polylooptest.MemoryFault{polylooptest.FailBefore, polylooptest.LoseAck} {
		w := newWorld(t, memstore.New(), policies(memory.Skip, memory.Skip, memory.Skip), oneFinal(), func(context.Context, int) (string, error) {
			return putting("k", `"v"`), nil
		})
		w.mem.FailView(1, fault)
		_, err := w.run(bg, "r")
		var pe *polyloop.PersistenceError
		if !errors.As(err, &pe) || memory.IsReceivable(err) {
			t.Fatalf("fault %d: err = %v", fault, err)
		}
		ops := w.ops("r")
		if ops["1/memory.1"] == nil || ops["1/memory.1"].Outcome != polyloop.OpDone || ops["1/view.1"] != nil {
			t.Fatalf("fault %d: operations %v", fault, ops)
		}
		var rr *memory.ReloadRequiredError
		if _, err := w.view.CurrentView(bg); !errors.As(err, &rr) {
			t.Fatalf("fault %d: the View answers after the failure: %v", fault, err)
		}
		if _, v := w.mem.Commits(); v != 1 {
			t.Fatalf("fault %d: %d view commits (a retry?)", fault, v)
		}
		res, err := w.resume(bg, "r")
		mustFinish(t, res, err)
		_, views := w.mem.Commits()
		if want := map[polylooptest.MemoryFault]int{polylooptest.FailBefore: 2, polylooptest.LoseAck: 1}[fault]; views != want {
			t.Fatalf("fault %d: %d view commits, want %d", fault, views, want)
		}
		if len(w.history("k")) != 1 || w.viewAt().Version != 1 {
			t.Fatalf("fault %d: history %v, view %+v", fault, w.history("k"), w.viewAt())
		}
	}
}

// cancelStore cancels the run at a chosen commit: before it reaches the
// store (nothing committed) or after (committed, the acknowledgement lost
// to the cancellation).
type cancelStore struct {
	polylooptest.MemoryStore
	cancel       func()
	write, view  bool // which commit cancels
	afterCommit  bool
	cancelledYet bool
}

func (s *cancelStore) CommitWrite(ctx context.Context, w memory.Write) (memory.Commit, error) {
	if !s.write || s.cancelledYet {
		return s.MemoryStore.CommitWrite(ctx, w)
	}
	s.cancelledYet = true
	if s.afterCommit {
		if _, err := s.MemoryStore.CommitWrite(ctx, w); err != nil {
			return memory.Commit{}, err
		}
	}
	s.cancel()
	return memory.Commit{}, ctx.Err()
}

func (s *cancelStore) CommitView(ctx context.Context, w memory.ViewWrite) (memory.ViewVersion, error) {
	if !s.view || s.cancelledYet {
		return s.MemoryStore.CommitView(ctx, w)
	}
	s.cancelledYet = true
	if s.afterCommit {
		if _, err := s.MemoryStore.CommitView(ctx, w); err != nil {
			return memory.ViewVersion{}, err
		}
	}
	s.cancel()
	return memory.ViewVersion{}, ctx.Err()
}

// Row 7: cancellation anywhere in the chain. Every established fact is
// kept — the step, the records written, the commits made — the run stops
// with the cancellation (no stop reason is invented), and a resume ends as
// the uninterrupted run did, writing nothing twice.
func TestTableCancellation(t *testing.T) {
	propose := func(context.Context, int) (string, error) { return putting("k", `"v"`), nil }
	ref := newWorld(t, memstore.New(), policies(memory.Skip, memory.Skip, memory.Skip), oneFinal(), propose)
	res, err := ref.run(bg, "r")
	mustFinish(t, res, err)
	for _, point := range []string{"proposer", "before memory commit", "after memory commit", "before view commit", "after view commit", "between operations"} {
		t.Run(point, func(t *testing.T) {
			ctx, cancel := context.WithCancel(bg)
			defer cancel()
			var w *world
			w = newWorld(t, memstore.New(), policies(memory.Skip, memory.Skip, memory.Skip), oneFinal(), func(pctx context.Context, step int) (string, error) {
				if point == "proposer" && w.proposals.calls == 1 {
					cancel()
					return "", pctx.Err()
				}
				return putting("k", `"v"`), nil
			})
			cs := &cancelStore{MemoryStore: w.runs, cancel: cancel, afterCommit: strings.HasPrefix(point, "after"),
				write: strings.Contains(point, "memory"), view: strings.Contains(point, "view commit")}
			w.mem = polylooptest.NewFaultyMemoryStore(cs)
			if point == "between operations" {
				w.publish = func(context.Context, memory.Commit) error { cancel(); return nil }
			}
			w.restart()
			_, err := w.run(ctx, "r")
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v", err)
			}
			before := w.log("r")
			if !hasKind(before, polyloop.KindStepCompleted) || hasKind(before, polyloop.KindRunFinished) {
				t.Fatalf("kinds after the cancellation: %v", before.Records)
			}
			res, err := w.resume(bg, "r")
			mustFinish(t, res, err)
			after := w.log("r")
			for i, r := range before.Records {
				if a, _ := after.Records[i].MarshalJSON(); string(a) != mustJSON(t, r) {
					t.Fatalf("record %d changed on resume", i)
				}
			}
			if err := polylooptest.CheckEquivalent(after, ref.log("r")); err != nil {
				t.Fatal(err)
			}
			if len(w.history("k")) != 1 || w.viewAt().Version != 1 {
				t.Fatalf("history %v, view %+v", w.history("k"), w.viewAt())
			}
		})
	}
}

func mustJSON(t *testing.T, r polyloop.Record) string {
	t.Helper()
	b, err := r.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A failure a policy did not receive stops the run, and a resume meets it
// again — until the configuration changes (design 0020): resumed with
// AllowConfigChange and a policy that receives it, the maintenance hands
// the recorded failure to the new policy, once, and records its reception;
// nothing runs again (no new proposal, no new write), and the run goes on.
// So for a proposal that failed (the child, or its answer), a conflict and
// a view rejection alike.
func TestPolicyChangeReceivesRecordedFailure(t *testing.T) {
	conflicting := func(w **world) func(context.Context, int) (string, error) {
		return func(context.Context, int) (string, error) {
			(*w).seed("other-run", "k", `"theirs"`)
			return putting("k", `"mine"`), nil
		}
	}
	for _, tc := range []struct {
		name          string
		before, after memory.MaintainerOptions
		propose       func(w **world) func(context.Context, int) (string, error)
		check         func(t *testing.T, w *world)
	}{
		{"proposal model failure", policies(memory.Fail, memory.Fail, memory.Fail), policies(memory.Skip, memory.Fail, memory.Fail),
			func(**world) func(context.Context, int) (string, error) {
				return func(context.Context, int) (string, error) { return "", errors.New("503 overloaded") }
			},
			func(t *testing.T, w *world) {
				rec := w.receptions("r")["r/1~:proposal.1"]
				if rec == nil || rec.Reception != polyloop.ReceptionHandled || !strings.Contains(string(rec.Value), `"skipped":true`) {
					t.Fatalf("the last reception %+v, want the failure handled by the new policy", rec)
				}
			}},
		{"proposal content rejection", policies(memory.Fail, memory.Fail, memory.Fail), policies(memory.Skip, memory.Fail, memory.Fail),
			func(**world) func(context.Context, int) (string, error) {
				return func(context.Context, int) (string, error) { return "I would rather not.", nil }
			},
			func(t *testing.T, w *world) {
				rec := w.receptions("r")["r/1~:proposal.1"]
				if rec == nil || rec.Reception != polyloop.ReceptionHandled || !strings.Contains(string(rec.Value), `"skipped":true`) {
					t.Fatalf("the last reception %+v, want the answer received by the new policy", rec)
				}
			}},
		{"conflict", policies(memory.Fail, memory.Fail, memory.Skip), policies(memory.Fail, memory.Skip, memory.Skip), conflicting,
			func(t *testing.T, w *world) {
				op := w.ops("r")["1/memory.1"]
				if op == nil || op.Outcome != polyloop.OpReceived || string(op.Value) != `{"conflict":true}` || !strings.Contains(op.Failure.Message, "conflicts") {
					t.Fatalf("the last memory operation %+v, want the conflict received", op)
				}
				if w.ops("r")["1/view.1"] == nil {
					t.Fatal("the maintenance did not go on after the received conflict")
				}
			}},
		{"view rejection", policies(memory.Fail, memory.Fail, memory.Fail), policies(memory.Fail, memory.Fail, memory.Skip),
			func(**world) func(context.Context, int) (string, error) {
				return func(context.Context, int) (string, error) {
					return `{"memory": [{"op": "put", "namespace": "facts", "key": "f", "value": 1}], "view": {"include": [{"namespace": "facts", "key": "f"}]}}`, nil
				}
			},
			func(t *testing.T, w *world) {
				op := w.ops("r")["1/view.1"]
				if op == nil || op.Outcome != polyloop.OpReceived || !strings.Contains(string(op.Value), `"rejected":true`) || !strings.Contains(op.Failure.Message, "(source)") {
					t.Fatalf("the last view operation %+v, want the rejection received", op)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w *world
			w = newWorld(t, memstore.New(), tc.before, oneFinal(), tc.propose(&w))
			w.seed("seed", "k", `"first"`)
			_, err := w.run(bg, "r")
			if err == nil || polyloop.MustPropagate(err) {
				t.Fatalf("the first run: %v, want the unreceived failure", err)
			}
			if _, again := w.resume(bg, "r"); again == nil || again.Error() != err.Error() {
				t.Fatalf("a resume under the same configuration: %v, want the recorded failure again", again)
			}
			commits, views := w.mem.Commits()
			records := len(w.log("r").Records)
			w.opts = tc.after
			w.restart()
			res, err := w.runner.ResumeWith(bg, "r", w.agent, polyloop.ResumeOptions{AllowConfigChange: true})
			mustFinish(t, res, err)
			tc.check(t, w)
			if n, v := w.mem.Commits(); n != commits || v != views || w.proposals.calls != 1 {
				t.Fatalf("the failure was not received but redone: %d memory and %d view commits (were %d, %d), %d proposals", n, v, commits, views, w.proposals.calls)
			}
			// Once: the reception is recorded right after the override.
			log := w.log("r")
			if _, ok := log.Records[records].Body.(*polyloop.ConfigOverride); !ok {
				t.Fatalf("record %d is %s, want the configuration override", records, log.Records[records].Kind())
			}
			if k := log.Records[records+1].Kind(); k != polyloop.KindMaintenanceOp && k != polyloop.KindChildReception {
				t.Fatalf("record %d is %s, want the new policy's reception", records+1, k)
			}
			if again, err := w.runner.ResumeWith(bg, "r", w.agent, polyloop.ResumeOptions{AllowConfigChange: true}); err != nil || again.StopReason != polyloop.StopCompleted || len(w.log("r").Records) != len(log.Records) {
				t.Fatalf("a resume of the finished run: %+v, %v", again, err)
			}
		})
	}
}
