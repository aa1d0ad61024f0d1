package polylooptest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/polyloop/polyloop"
)

// executorFunc adapts a function to ActionExecutor.
type executorFunc func(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error)

func (f executorFunc) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	return f(ctx, a)
}

// breakExecutor makes executors that answer with broken when it says so
// (handled), and like goodExecutor otherwise.
func breakExecutor(broken func(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error, bool)) func(testing.TB) polyloop.ActionExecutor {
	return func(testing.TB) polyloop.ActionExecutor {
		return executorFunc(func(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
			if out, err, handled := broken(ctx, a); handled {
				return out, err
			}
			return goodExecutor{}.Execute(ctx, a)
		})
	}
}

func executorWith(f func(h *ExecutorHarness)) ExecutorHarness {
	h := goodExecutorHarness()
	f(&h)
	return h
}

// onTool breaks the actions of one tool.
func onTool(tool string, out polyloop.ActionOutcome, err error) func(h *ExecutorHarness) {
	return func(h *ExecutorHarness) {
		h.New = breakExecutor(func(_ context.Context, a polyloop.Action) (polyloop.ActionOutcome, error, bool) {
			return out, err, a.Tool == tool
		})
	}
}

func brokenExecutorCases() []brokenCase {
	c := func(check string, r rule, h ExecutorHarness) brokenCase {
		return brokenCase{"ActionExecutor", check, r, func(t *testing.T) outcome { return runNamed(t, executorChecks, check, h, h.settings()) }}
	}
	executed := polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "ok"}
	var mu sync.Mutex
	return []brokenCase{
		c("Succeeds", ruleRanIsExecuted, executorWith(onTool("echo", polyloop.ActionOutcome{Status: polyloop.NotExecuted}, nil))),
		c("Succeeds", ruleRanIsExecuted, executorWith(onTool("echo", polyloop.ActionOutcome{Status: "done"}, nil))),
		c("Succeeds", ruleTruncatedCount, executorWith(onTool("echo", polyloop.ActionOutcome{Status: polyloop.Executed, TruncatedChars: -1}, nil))),
		c("FailsIsExecuted", ruleRanIsExecuted, executorWith(onTool("fail", polyloop.ActionOutcome{Status: polyloop.EnvError}, nil))),
		c("FailsIsExecuted", ruleRanIsExecuted, executorWith(onTool("fail", polyloop.ActionOutcome{}, errors.New("exit status 1")))),
		c("FailsIsExecuted", ruleFailureObserved, executorWith(onTool("fail", polyloop.ActionOutcome{Status: polyloop.Executed}, nil))),
		c("UnknownTool", ruleNotStartedIsRefused, executorWith(onTool("polylooptest_no_such_tool", polyloop.ActionOutcome{}, errors.New("no such tool")))),
		c("InvalidArgs", ruleNotStartedIsRefused, executorWith(func(h *ExecutorHarness) {
			h.New = breakExecutor(func(_ context.Context, a polyloop.Action) (polyloop.ActionOutcome, error, bool) {
				return executed, nil, a.Tool == "echo" // runs whatever the arguments
			})
		})),
		c("CancelledContext", ruleCancelError, executorWith(onTool("echo", executed, nil))),
		c("CancelInFlight", ruleCancelError, executorWith(func(h *ExecutorHarness) {
			h.New = breakExecutor(func(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error, bool) {
				if a.Tool != "sleep" {
					return polyloop.ActionOutcome{}, nil, false
				}
				<-ctx.Done()
				return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "interrupted"}, nil, true
			})
		})),
		c("CancelInFlight", ruleNoLeftovers, executorWith(func(h *ExecutorHarness) {
			h.NoLeftovers = func(testing.TB) error { return errors.New("process 4242 (sleep 3600) is still running") }
		})),
		c("DeadlineInFlight", ruleCancelError, executorWith(func(h *ExecutorHarness) {
			h.New = breakExecutor(func(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error, bool) {
				if a.Tool != "sleep" {
					return polyloop.ActionOutcome{}, nil, false
				}
				<-ctx.Done()
				return polyloop.ActionOutcome{}, errors.New("signal: killed"), true
			})
		})),
		c("ActionNotModified", ruleActionNotModified, executorWith(func(h *ExecutorHarness) {
			h.New = breakExecutor(func(_ context.Context, a polyloop.Action) (polyloop.ActionOutcome, error, bool) {
				if len(a.Args) > 0 {
					a.Args[0] = ' '
				}
				return polyloop.ActionOutcome{}, nil, false
			})
		})),
		c("Concurrent", ruleConcurrentUse, executorWith(func(h *ExecutorHarness) {
			h.New = breakExecutor(func(_ context.Context, a polyloop.Action) (polyloop.ActionOutcome, error, bool) {
				if !mu.TryLock() {
					return polyloop.ActionOutcome{}, errors.New("busy"), true
				}
				defer mu.Unlock()
				spin()
				return polyloop.ActionOutcome{}, nil, false
			})
		})),
		c("EnvError", ruleEnvFailureIsEnvError, executorWith(func(h *ExecutorHarness) {
			h.NewBrokenEnv = breakExecutor(func(context.Context, polyloop.Action) (polyloop.ActionOutcome, error, bool) {
				return polyloop.ActionOutcome{}, errors.New("dial tcp: connection refused"), true
			})
		})),
	}
}

// TestNoLeftoversMissingIsLogged: without NoLeftovers the child-process part
// of the in-flight checks cannot run, and the kit says so.
func TestNoLeftoversMissingIsLogged(t *testing.T) {
	h := goodExecutorHarness()
	h.NoLeftovers = nil
	for _, name := range []string{"CancelInFlight", "DeadlineInFlight"} {
		rec := &recordingTB{}
		if o := runNamed(rec, executorChecks, name, h, h.settings()); o.err != nil || o.skip != "" {
			t.Fatalf("%s: %+v", name, o)
		}
		rec.mu.Lock()
		logs := strings.Join(rec.logs, "\n")
		rec.mu.Unlock()
		if !strings.Contains(logs, "NoLeftovers") {
			t.Errorf("%s without NoLeftovers logged nothing about it; logs: %q", name, logs)
		}
	}
}
