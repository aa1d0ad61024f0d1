package mcpexec_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/mcpexec"
)

// TestStartTimeout: a server that never answers initialize fails New with
// a *StartError saying it did not answer in time; its process is ended.
func TestStartTimeout(t *testing.T) {
	t.Parallel()
	_, err := mcpexec.New(context.Background(), mcpexec.Options{Command: []string{"sleep", "600"}, StartTimeout: 200 * time.Millisecond})
	var se *mcpexec.StartError
	if !errors.As(err, &se) || !errors.Is(err, mcpexec.ErrTimeout) || !strings.Contains(err.Error(), "did not answer within 200ms (start timeout)") {
		t.Fatalf("New: %v, want a *StartError for the start timeout", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Error("a start timeout reads as the caller's deadline")
	}
}

// TestCallTimeout: a call the server does not answer within CallTimeout is
// EnvError with an observation saying so; the caller's own cancellation
// still returns its error.
func TestCallTimeout(t *testing.T) {
	t.Parallel()
	st := &serverState{started: make(chan struct{}), cancelled: make(chan struct{})}
	e := newInMemory(t, st, mcpexec.Options{CallTimeout: 100 * time.Millisecond})
	out, err := e.Execute(context.Background(), call("slow", `{}`))
	if err != nil || out.Status != polyloop.EnvError || !strings.Contains(out.Observation, `tool "slow": no answer within 100ms (the call timeout)`) {
		t.Fatalf("Execute = %+v, %v; want EnvError for the call timeout", out, err)
	}
	select {
	case <-st.cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the call cancelled")
	}
}

// TestTimeoutsDefault: zero options take the defaults.
func TestTimeoutsDefault(t *testing.T) {
	if mcpexec.DefaultStartTimeout != 30*time.Second || mcpexec.DefaultCallTimeout != 10*time.Minute {
		t.Errorf("defaults %v, %v", mcpexec.DefaultStartTimeout, mcpexec.DefaultCallTimeout)
	}
}
