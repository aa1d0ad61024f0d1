package polylooptest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// ExecutorHarness tells TestActionExecutor how to drive an ActionExecutor.
// New and Succeeds are required; every check that needs a missing field is
// skipped with the reason logged.
type ExecutorHarness struct {
	// New returns a fresh executor. It is called once or more per subtest,
	// from a goroutine other than the test's: use t.Cleanup to release what
	// it holds (servers, sessions, directories).
	New func(t testing.TB) polyloop.ActionExecutor
	// Succeeds is an action that runs and succeeds.
	Succeeds polyloop.Action
	// Fails is an action that runs and fails (a command exiting non-zero, a
	// tool returning an error result): it must be Executed, with an
	// observation.
	Fails polyloop.Action
	// UnknownTool is an action naming a tool the executor does not have.
	// The zero value means a call of the tool "polylooptest_no_such_tool".
	UnknownTool polyloop.Action
	// InvalidArgs is an action whose arguments the executor must refuse
	// before running anything.
	InvalidArgs polyloop.Action
	// Blocks is an action that runs until its context is cancelled (a
	// "sleep 3600", a tool waiting on its context).
	Blocks polyloop.Action
	// NoLeftovers, when set, is called after a Blocks action was cancelled
	// and must return an error if anything the action started is still
	// alive: a child process, a container, a session. The kit retries it
	// for a short while before failing.
	NoLeftovers func(t testing.TB) error
	// NewBrokenEnv returns an executor whose environment is broken (its
	// server killed, its connection refused): Succeeds must give EnvError,
	// with a nil error. Nil: the EnvError check is skipped with a note.
	NewBrokenEnv func(t testing.TB) polyloop.ActionExecutor
	// Skip names checks the implementation cannot honour, with the reason
	// logged when each is skipped. A name that is no check fails the suite.
	Skip map[string]string
	// Timeout is the watchdog of each subtest (DefaultTimeout when zero).
	Timeout time.Duration
	// CancelWithin is how soon a call must return once its context is done
	// (DefaultCancelWithin when zero).
	CancelWithin time.Duration
}

// TestActionExecutor checks that the executors made by h honour the
// ActionExecutor contract. Run it with -race, from a test that is not
// parallel with others (the leak checks see the process's goroutines).
//
// The checks (subtest names, usable as keys of h.Skip):
//   - Succeeds: h.Succeeds is Executed, with a nil error.
//   - FailsIsExecuted: h.Fails is Executed (an action that fails is not an
//     environment failure), with an observation for the model.
//   - UnknownTool, InvalidArgs: NotExecuted, with a nil error.
//   - CancelledContext: Execute with a cancelled context returns promptly
//     an error that errors.Is context.Canceled, and starts nothing.
//   - CancelInFlight: h.Blocks returns promptly once cancelled, with an
//     error that errors.Is context.Canceled, leaking no goroutine, and
//     h.NoLeftovers finds nothing.
//   - DeadlineInFlight: the same with a deadline (context.DeadlineExceeded
//     or context.Canceled).
//   - ActionNotModified: Execute leaves the action as it was.
//   - Concurrent: concurrent calls of h.Succeeds on one executor are all
//     Executed.
//   - EnvError: with NewBrokenEnv, h.Succeeds gives EnvError and a nil
//     error.
//
// What the kit cannot assert for an arbitrary executor: that an
// environment failure is returned as EnvError rather than as an error. An
// error from Execute is outside the protocol — the library propagates it
// and leaves the log at "action intent present, step record absent" — so an
// executor that raises where it should return EnvError turns an
// environment failure into an unknown state. The library side of that rule
// is asserted by TestExecutorErrorPropagates in package polyloop (SPEC
// §3.3); give NewBrokenEnv to assert the executor side.
func TestActionExecutor(t *testing.T, h ExecutorHarness) {
	t.Helper()
	if h.New == nil || isZeroAction(h.Succeeds) {
		t.Fatal("polylooptest: ExecutorHarness.New and Succeeds are required")
	}
	runSuite(t, "ActionExecutor", h, newSettings(h.Timeout, h.CancelWithin, h.Skip), executorChecks)
}

var executorChecks = []check[ExecutorHarness]{
	{"Succeeds", checkExecSucceeds},
	{"FailsIsExecuted", checkExecFails},
	{"UnknownTool", checkExecUnknownTool},
	{"InvalidArgs", checkExecInvalidArgs},
	{"CancelledContext", checkExecCancelledContext},
	{"CancelInFlight", checkExecCancelInFlight},
	{"DeadlineInFlight", checkExecDeadlineInFlight},
	{"ActionNotModified", checkExecActionNotModified},
	{"Concurrent", checkExecConcurrent},
	{"EnvError", checkExecEnvError},
}

func isZeroAction(a polyloop.Action) bool { return a.Tool == "" && a.Code == "" }

// statusRules are the rules an outcome of each status keeps.
var statusRules = map[polyloop.ActionStatus]rule{
	polyloop.Executed:    ruleRanIsExecuted,
	polyloop.NotExecuted: ruleNotStartedIsRefused,
	polyloop.EnvError:    ruleEnvFailureIsEnvError,
}

// execute runs a on x and checks the outcome's status: an error, or
// another status, breaks the rule of the status wanted.
func execute(e *env, x polyloop.ActionExecutor, name string, a polyloop.Action, want polyloop.ActionStatus) (polyloop.ActionOutcome, error) {
	out, err := x.Execute(e.ctx, a)
	switch {
	case err != nil:
		return out, broke(statusRules[want], "%s action %s: Execute returned error %q (%T); want outcome %q and a nil error (an error is outside the protocol: the run stops with its outcome unknown)",
			name, cutJSON(a), err, err, want)
	case out.Status != want:
		return out, broke(statusRules[want], "%s action %s: status %q, want %q (observation %q)", name, cutJSON(a), out.Status, want, cut([]byte(out.Observation)))
	case out.TruncatedChars < 0:
		return out, broke(ruleTruncatedCount, "%s action: negative TruncatedChars %d", name, out.TruncatedChars)
	}
	return out, nil
}

func checkExecSucceeds(e *env, h ExecutorHarness) error {
	_, err := execute(e, h.New(e.t), "Succeeds", h.Succeeds, polyloop.Executed)
	return err
}

func checkExecFails(e *env, h ExecutorHarness) error {
	if isZeroAction(h.Fails) {
		return skipf("the harness gives no Fails action")
	}
	out, err := execute(e, h.New(e.t), "Fails", h.Fails, polyloop.Executed)
	if err != nil {
		return err
	}
	if out.Observation == "" {
		return broke(ruleFailureObserved, "Fails action: empty observation; an action that fails must tell the model what went wrong")
	}
	return nil
}

func checkExecUnknownTool(e *env, h ExecutorHarness) error {
	a := h.UnknownTool
	if isZeroAction(a) {
		a = polyloop.Action{CallID: "polylooptest-call", Tool: "polylooptest_no_such_tool", Args: json.RawMessage(`{}`)}
	}
	_, err := execute(e, h.New(e.t), "UnknownTool", a, polyloop.NotExecuted)
	return err
}

func checkExecInvalidArgs(e *env, h ExecutorHarness) error {
	if isZeroAction(h.InvalidArgs) {
		return skipf("the harness gives no InvalidArgs action")
	}
	_, err := execute(e, h.New(e.t), "InvalidArgs", h.InvalidArgs, polyloop.NotExecuted)
	return err
}

func checkExecCancelledContext(e *env, h ExecutorHarness) error {
	x := h.New(e.t)
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	base := goroutineBaseline()
	err := returnsPromptly(e, func() error {
		_, err := x.Execute(ctx, h.Succeeds)
		return err
	})
	if err := cancelError(err, context.Canceled, "Execute of Succeeds with a cancelled context"); err != nil {
		return err
	}
	return leaked(base, "Execute with a cancelled context")
}

func checkExecCancelInFlight(e *env, h ExecutorHarness) error {
	return execInFlight(e, h, false)
}

func checkExecDeadlineInFlight(e *env, h ExecutorHarness) error {
	return execInFlight(e, h, true)
}

func execInFlight(e *env, h ExecutorHarness, deadline bool) error {
	if isZeroAction(h.Blocks) {
		return skipf("the harness gives no Blocks action, so no action can be held in flight")
	}
	x := h.New(e.t)
	var also []error
	if deadline {
		also = []error{context.Canceled}
	}
	err := inFlight(e, "Execute of Blocks", func(ctx context.Context) error {
		_, err := x.Execute(ctx, h.Blocks)
		return err
	}, deadline, also...)
	if err != nil {
		return err
	}
	if h.NoLeftovers == nil {
		e.logf("not checked: processes, containers or sessions the Blocks action started may still be alive; the harness gives no NoLeftovers")
		return nil
	}
	if err := settled(func() error { return h.NoLeftovers(e.t) }); err != nil {
		return broke(ruleNoLeftovers, "after the cancelled Blocks action returned, NoLeftovers found: %w", err)
	}
	return nil
}

func checkExecActionNotModified(e *env, h ExecutorHarness) error {
	x := h.New(e.t)
	for _, a := range []polyloop.Action{h.Succeeds, h.Fails, h.InvalidArgs} {
		if isZeroAction(a) {
			continue
		}
		before := cloneAction(a)
		if _, err := x.Execute(e.ctx, a); err != nil {
			return broke(ruleRanIsExecuted, "action %s: Execute failed: %w", cutJSON(before), err)
		}
		if !before.Equal(a) {
			return broke(ruleActionNotModified, "Execute modified the action: before %s, after %s", cutJSON(before), cutJSON(a))
		}
	}
	return nil
}

func cloneAction(a polyloop.Action) polyloop.Action {
	if a.Args != nil {
		a.Args = append(json.RawMessage{}, a.Args...)
	}
	return a
}

func checkExecConcurrent(e *env, h ExecutorHarness) error {
	x := h.New(e.t)
	const workers = 4
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			_, err := execute(e, x, "concurrent Succeeds", h.Succeeds, polyloop.Executed)
			errs[w] = retag(ruleConcurrentUse, err)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func checkExecEnvError(e *env, h ExecutorHarness) error {
	if h.NewBrokenEnv == nil {
		return skipf("the harness gives no NewBrokenEnv, and the kit cannot break an arbitrary environment. " +
			"An environment failure must be returned as EnvError, not as an error; the library side is " +
			"asserted by TestExecutorErrorPropagates in package polyloop (SPEC §3.3)")
	}
	_, err := execute(e, h.NewBrokenEnv(e.t), "Succeeds on a broken environment", h.Succeeds, polyloop.EnvError)
	return err
}
