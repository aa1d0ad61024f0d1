package polyloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/polylooptest"
	"github.com/polyloop/polyloop/scriptmodel"
)

// payService is a fake payment service: POST /charges with an
// Idempotency-Key header charges once per key (a second request with the
// key gets the first charge back); GET /charges?key=K looks a charge up by
// its key (404: no charge under it). dropReply makes the next POST commit
// its charge and then drop the connection before replying.
type payService struct {
	mu        sync.Mutex
	byKey     map[string]charge
	charges   []charge
	dropReply bool
	srv       *httptest.Server
}

type charge struct {
	ID    string `json:"id"`
	Cents int    `json:"cents"`
	Key   string `json:"key"`
}

// observation is what the tool reports for a charge, whether it made it or
// a reconciler found it.
func (c charge) observation() string { return fmt.Sprintf("charged %d cents (%s)", c.Cents, c.ID) }

func newPayService(t *testing.T) *payService {
	s := &payService{byKey: map[string]charge{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *payService) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.Method {
	case http.MethodGet:
		c, ok := s.byKey[r.URL.Query().Get("key")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(c)
	case http.MethodPost:
		key := r.Header.Get("Idempotency-Key")
		var req struct{ Cents int }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || key == "" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		c, ok := s.byKey[key]
		if !ok {
			c = charge{ID: fmt.Sprintf("ch_%d", len(s.charges)+1), Cents: req.Cents, Key: key}
			s.byKey[key] = c
			s.charges = append(s.charges, c)
		}
		if s.dropReply {
			s.dropReply = false
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		_ = json.NewEncoder(w).Encode(c)
	}
}

func (s *payService) all() []charge {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]charge(nil), s.charges...)
}

// errCrash stands for the process dying in the middle of an action: an
// error outside the protocol leaves the log where a crash leaves it, at
// the action's intent without an outcome.
var errCrash = errors.New("crash")

// payExec runs the tool "pay" {"cents": N} against the service, passing
// the action's idempotency key as the Idempotency-Key header; with
// reconcile, it answers for a pay action of unknown outcome by looking the
// key up. crashBefore makes the next Execute crash before its request.
type payExec struct {
	svc         *payService
	reconcile   bool
	crashBefore bool
}

func (p *payExec) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	key, ok := polyloop.IdempotencyKeyFromContext(ctx)
	if !ok {
		return polyloop.ActionOutcome{}, errors.New("payExec: no idempotency key in the action's context")
	}
	if p.crashBefore {
		p.crashBefore = false
		return polyloop.ActionOutcome{}, errCrash
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.svc.srv.URL+"/charges", strings.NewReader(string(a.Args)))
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return polyloop.ActionOutcome{}, fmt.Errorf("%w: %v", errCrash, err) // the reply never came
	}
	defer resp.Body.Close()
	var c charge
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		return polyloop.ActionOutcome{}, err
	}
	return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: c.observation()}, nil
}

// payReconciler is payExec with a reconciler.
type payReconciler struct{ *payExec }

func (p payReconciler) Reconcile(ctx context.Context, q polyloop.ReconcileQuery) (polyloop.Verdict, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.svc.srv.URL+"/charges?key="+q.Key, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return polyloop.Verdict{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	switch resp.StatusCode {
	case http.StatusNotFound:
		// The service commits a charge before it replies, and the crashed
		// process sends nothing more: no charge is no charge.
		return polyloop.Verdict{Kind: polyloop.VerdictNotHappened, Said: "no charge under the key"}, nil
	case http.StatusOK:
		var c charge
		if err := json.Unmarshal(body, &c); err != nil {
			return polyloop.Verdict{}, err
		}
		return polyloop.Verdict{Kind: polyloop.VerdictCompleted, Said: "charge " + c.ID,
			Outcome: &polyloop.ActionOutcome{Status: polyloop.Executed, Observation: c.observation()}}, nil
	}
	return polyloop.Verdict{Kind: polyloop.VerdictUnknown, Said: resp.Status}, nil
}

func payAgent(policy polyloop.ReplayPolicy) polyloop.Agent {
	return polyloop.Agent{Name: "payer", System: "Pay.",
		Tools:  []polyloop.ToolSpec{{Name: "pay", Parameters: json.RawMessage(`{"type":"object"}`), Replay: policy}},
		Limits: polyloop.Limits{MaxSteps: 5}, Model: polyloop.ModelParams{Provider: "script", Model: "script-1"}}
}

// TestReconcileCrashCampaign kills a run that charges a payment service at
// every point around the call — before the request, after the service
// committed but before the reply, after the reply before the outcome record
// — and resumes it: with a reconciler, every run completes with exactly one
// charge per action and the outcome adopted is the service's; without one,
// the run ends resume_state_unknown as before; with the key passed through
// and replay: idempotent, the replay charges once.
func TestReconcileCrashCampaign(t *testing.T) {
	points := []string{"before_request", "after_commit_before_reply", "after_reply_before_record"}
	modes := []struct {
		name   string
		policy polyloop.ReplayPolicy
		recon  bool
	}{
		{"reconcile", polyloop.NeverReplay, true},
		{"no_reconciler", polyloop.NeverReplay, false},
		{"idempotent", polyloop.ReplayIdempotent, false},
	}
	for _, mode := range modes {
		for _, point := range points {
			t.Run(mode.name+"/"+point, func(t *testing.T) {
				svc := newPayService(t)
				pe := &payExec{svc: svc}
				var exec polyloop.ActionExecutor = pe
				if mode.recon {
					exec = payReconciler{pe}
				}
				store := memstore.New()
				var first polyloop.Store = store
				switch point {
				case "before_request":
					pe.crashBefore = true
				case "after_commit_before_reply":
					svc.dropReply = true
				case "after_reply_before_record":
					// The third Append holds the pay action's outcome.
					first = &polylooptest.FaultyStore{Store: store, FailAppend: 3}
				}
				model := scriptmodel.New(scriptmodel.Call("c1", "pay", map[string]int{"cents": 250}), scriptmodel.Reply("paid"))
				agent := payAgent(mode.policy)
				r := &polyloop.Runner{Model: model, Parser: testParser{}, Executor: exec, Store: first}
				if _, err := r.Run(context.Background(), "pay-1", agent, polyloop.Task{Input: "pay 250"}); err == nil {
					t.Fatal("the run was not killed")
				}
				wantCharges := 1
				if point == "before_request" {
					wantCharges = 0
				}
				if got := len(svc.all()); got != wantCharges {
					t.Fatalf("%d charges at the crash, want %d", got, wantCharges)
				}
				r.Store = store
				res, err := r.Resume(context.Background(), "pay-1", agent)
				if err != nil {
					t.Fatal(err)
				}
				log, err := polyloop.ReadLog(context.Background(), store, "pay-1")
				if err != nil {
					t.Fatal(err)
				}
				if !mode.recon && mode.policy == polyloop.NeverReplay {
					if res.StopReason != polyloop.StopResumeStateUnknown {
						t.Fatalf("stop %s, want resume_state_unknown", res.StopReason)
					}
					if res.Totals.Reconciled.Total() != 0 {
						t.Fatalf("reconciliations counted without a reconciler: %+v", res.Totals.Reconciled)
					}
					return
				}
				charges := svc.all()
				if res.StopReason != polyloop.StopCompleted || len(charges) != 1 {
					t.Fatalf("stop %s with %d charges %+v, want completed with exactly one", res.StopReason, len(charges), charges)
				}
				steps := polyloop.Steps(log)
				if obs := steps[0].Settled[0].Observation; obs != charges[0].observation() {
					t.Fatalf("the run's outcome %q is not the service's %q", obs, charges[0].observation())
				}
				// Every intent of the action — the first, a replay, a re-run —
				// carries the one key the service charged under.
				for _, in := range intents(log) {
					if in.IdempotencyKey != charges[0].Key {
						t.Fatalf("the service charged under key %q, attempt %d has key %q", charges[0].Key, in.Attempt, in.IdempotencyKey)
					}
				}
				if n := len(intents(log)); (n == 2) != (point == "before_request" || !mode.recon) {
					t.Fatalf("%d intents", n)
				}
				checkReconciled(t, res.Totals.Reconciled, mode.recon, point)
			})
		}
	}
}

// checkReconciled checks the run's count of reconciliations: an adoption
// when the service had committed, a re-run when it had not; none when the
// action replayed by its policy.
func checkReconciled(t *testing.T, got polyloop.ReconciledCounts, recon bool, point string) {
	t.Helper()
	want := polyloop.ReconciledCounts{}
	switch {
	case !recon:
	case point == "before_request":
		want.Rerun = 1
	default:
		want.Adopted = 1
	}
	if got != want {
		t.Fatalf("reconciled %+v, want %+v", got, want)
	}
}

func intents(log polyloop.RunLog) []*polyloop.ActionIntent {
	var out []*polyloop.ActionIntent
	for _, r := range log.Records {
		if in, ok := r.Body.(*polyloop.ActionIntent); ok {
			out = append(out, in)
		}
	}
	return out
}

// errLookup is a reconciler's failure to ask its service.
var errLookup = errors.New("lookup failed")

// brokenPayReconciler answers with err, or with v.
type brokenPayReconciler struct {
	*payExec
	v   polyloop.Verdict
	err error
}

func (b brokenPayReconciler) Reconcile(context.Context, polyloop.ReconcileQuery) (polyloop.Verdict, error) {
	return b.v, b.err
}

// A reconciler's error propagates out of Resume as an executor's does,
// and a "completed" without an outcome is refused (ErrInvalidVerdict):
// either way nothing is recorded and the log stays at intent-without-
// outcome, so a later resume asks again.
func TestReconcilerFailuresPropagate(t *testing.T) {
	for _, tc := range []struct {
		name string
		rec  brokenPayReconciler
		want error
	}{
		{"error", brokenPayReconciler{err: errLookup}, errLookup},
		{"completed without outcome", brokenPayReconciler{v: polyloop.Verdict{Kind: polyloop.VerdictCompleted}}, polyloop.ErrInvalidVerdict},
		{"completed not executed", brokenPayReconciler{v: polyloop.Verdict{Kind: polyloop.VerdictCompleted,
			Outcome: &polyloop.ActionOutcome{Status: polyloop.NotExecuted}}}, polyloop.ErrInvalidVerdict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := newPayService(t)
			pe := &payExec{svc: svc, crashBefore: true}
			store := memstore.New()
			model := scriptmodel.New(scriptmodel.Call("c1", "pay", map[string]int{"cents": 1}), scriptmodel.Reply("paid"))
			agent := payAgent(polyloop.NeverReplay)
			tc.rec.payExec = pe
			r := &polyloop.Runner{Model: model, Parser: testParser{}, Executor: tc.rec, Store: store}
			if _, err := r.Run(context.Background(), "p", agent, polyloop.Task{Input: "pay"}); !errors.Is(err, errCrash) {
				t.Fatalf("run: %v", err)
			}
			before, _ := polyloop.ReadLog(context.Background(), store, "p")
			_, err := r.Resume(context.Background(), "p", agent)
			if !errors.Is(err, tc.want) {
				t.Fatalf("resume: %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), "action a1: ") || strings.Contains(err.Error(), "brokenPayReconciler") {
				t.Fatalf("resume: %q, want the action named and no Go type", err)
			}
			after, _ := polyloop.ReadLog(context.Background(), store, "p")
			if len(after.Records) != len(before.Records) {
				t.Fatalf("the resume wrote %d records", len(after.Records)-len(before.Records))
			}
			if plan, err := polyloop.PlanResume(after); err != nil || plan.Action != polyloop.PlanReconcile {
				t.Fatalf("plan %v, %v; want reconcile", plan.Action, err)
			}
		})
	}
}

// A verdict is one JSON object and nothing after it: text that follows
// (a second object, a word) makes it no verdict.
func TestParseVerdictRefusesTrailingData(t *testing.T) {
	for _, in := range []string{
		`{"verdict":"completed","observation":"ok"} trailing`,
		`{"verdict":"not_happened"}{"verdict":"completed","observation":"ok"}`,
		`{"verdict":"unknown"} 1`,
	} {
		if _, err := polyloop.ParseVerdict([]byte(in)); !errors.Is(err, polyloop.ErrInvalidVerdict) {
			t.Errorf("ParseVerdict(%s) = %v, want ErrInvalidVerdict", in, err)
		}
	}
	for _, in := range []string{`{"verdict":"completed","observation":"ok"}`, "{\"verdict\":\"not_happened\"}\n  \n"} {
		if _, err := polyloop.ParseVerdict([]byte(in)); err != nil {
			t.Errorf("ParseVerdict(%q) = %v", in, err)
		}
	}
}
