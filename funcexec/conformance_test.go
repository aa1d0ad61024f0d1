package funcexec_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/funcexec"
	"github.com/polyloop/polyloop/polylooptest"
)

type textArgs struct {
	Text string `json:"text"`
}

// conformanceExecutor has an echo tool that succeeds, a tool that fails, and
// one that blocks until cancelled. When broken, echo reports that its
// environment is gone.
func conformanceExecutor(broken bool) *funcexec.Executor {
	e := funcexec.New()
	funcexec.MustRegister(e, "echo", "Echoes.", polyloop.ReplaySafe,
		func(_ context.Context, a textArgs) (string, error) {
			if broken {
				return "", funcexec.EnvError(errors.New("backend unreachable"))
			}
			return a.Text, nil
		})
	funcexec.MustRegister(e, "fail", "Fails.", polyloop.NeverReplay,
		func(context.Context, struct{}) (string, error) { return "", errors.New("no such file") })
	funcexec.MustRegister(e, "block", "Blocks until cancelled.", polyloop.NeverReplay,
		func(ctx context.Context, _ struct{}) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		})
	return e
}

func TestConformance(t *testing.T) {
	polylooptest.TestActionExecutor(t, polylooptest.ExecutorHarness{
		New:          func(testing.TB) polyloop.ActionExecutor { return conformanceExecutor(false) },
		NewBrokenEnv: func(testing.TB) polyloop.ActionExecutor { return conformanceExecutor(true) },
		Succeeds:     polyloop.Action{CallID: "c1", Tool: "echo", Args: json.RawMessage(`{"text":"hi"}`)},
		Fails:        polyloop.Action{CallID: "c2", Tool: "fail", Args: json.RawMessage(`{}`)},
		InvalidArgs:  polyloop.Action{CallID: "c3", Tool: "echo", Args: json.RawMessage(`{"text":7}`)},
		Blocks:       polyloop.Action{CallID: "c4", Tool: "block", Args: json.RawMessage(`{}`)},
	})
}
