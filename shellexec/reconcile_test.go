package shellexec_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/polylooptest"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/shellexec"
	"github.com/polyloop/polyloop/toolcallparser"
)

// lookupCommand answers from the files under charges/, one per key, as a
// payment service's lookup by idempotency key would.
const lookupCommand = `f="charges/$POLYLOOP_IDEMPOTENCY_KEY"
if [ -f "$f" ]; then printf '{"verdict":"completed","observation":"%s","said":"found %s"}' "$(cat "$f")" "$POLYLOOP_ACTION_ID"
else echo '{"verdict":"not_happened","said":"no charge"}'; fi`

func reconcilingShell(t testing.TB, reconcile string) *shellexec.Executor {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "charges"), 0o755); err != nil {
		t.Fatal(err)
	}
	ex, err := shellexec.New(shellexec.Options{Dir: dir, Reconcile: reconcile})
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

func bashAction(cmd string) polyloop.Action {
	args, _ := json.Marshal(map[string]string{"command": cmd})
	return polyloop.Action{CallID: "c1", Tool: shellexec.ToolName, Args: args}
}

// The reconcile command honours the Reconciler contract (the kit).
func TestReconcileCommandConformance(t *testing.T) {
	polylooptest.TestReconciler(t, polylooptest.ReconcilerHarness{
		New:    func(t testing.TB) polyloop.Reconciler { return reconcilingShell(t, lookupCommand) },
		Action: bashAction(`echo charge`),
		Happen: func(t testing.TB, r polyloop.Reconciler, key string) {
			dir := r.(*shellexec.Executor).Dir()
			if err := os.WriteFile(filepath.Join(dir, "charges", key), []byte("charged "+key[:8]), 0o644); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// A reconcile command that fails, or prints something else than a verdict,
// is the reconciler's error; without a command, the shell answers for
// nothing.
func TestReconcileCommandFailures(t *testing.T) {
	q := polyloop.ReconcileQuery{RunID: "r", Step: 1, ActionID: "a1", Attempt: 1, Action: bashAction("true"), Key: "k"}
	for _, tc := range []struct{ name, cmd string }{
		{"exit", "echo oops >&2; exit 3"},
		{"not json", "echo charged"},
		{"completed without observation", `echo '{"verdict":"completed"}'`},
		{"unknown verdict", `echo '{"verdict":"maybe"}'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := reconcilingShell(t, tc.cmd).Reconcile(context.Background(), q)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.name != "exit" && !errors.Is(err, polyloop.ErrInvalidVerdict) {
				t.Fatalf("%v, want ErrInvalidVerdict", err)
			}
		})
	}
	if reconcilingShell(t, "").Reconciles(q.Action) {
		t.Fatal("a shell without a reconcile command reconciles")
	}
}

// Every command an action runs sees the action's idempotency key, the one
// its intent records.
func TestActionSeesItsKey(t *testing.T) {
	ex := reconcilingShell(t, "")
	store := memstore.New()
	model := scriptmodel.New(scriptmodel.Call("c1", shellexec.ToolName, map[string]string{"command": `echo "key=$POLYLOOP_IDEMPOTENCY_KEY"`}), scriptmodel.Reply("done"))
	r := &polyloop.Runner{Model: model, Parser: toolcallparser.New(toolcallparser.Options{}), Executor: ex, Store: store}
	agent := polyloop.Agent{Name: "k", Limits: polyloop.Limits{MaxSteps: 3}}
	if _, err := r.Run(context.Background(), "run-k", agent, polyloop.Task{Input: "x"}); err != nil {
		t.Fatal(err)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "run-k")
	steps := polyloop.Steps(log)
	var key string
	for _, rec := range log.Records {
		if in, ok := rec.Body.(*polyloop.ActionIntent); ok {
			key = in.IdempotencyKey
		}
	}
	if key == "" || !strings.Contains(steps[0].Settled[0].Observation, "key="+key) {
		t.Fatalf("the command saw %q, the intent records key %q", steps[0].Settled[0].Observation, key)
	}
}
