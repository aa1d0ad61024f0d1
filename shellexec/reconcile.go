package shellexec

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"syscall"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/procgroup"
)

// KeyEnv is the environment variable that holds the action's idempotency
// key (polyloop.IdempotencyKeyFor) in every command the executor runs for
// an action; a command passes it on to the API it calls.
const KeyEnv = "POLYLOOP_IDEMPOTENCY_KEY"

// The other variables a reconcile command gets (Options.Reconcile).
const (
	RunIDEnv    = "POLYLOOP_RUN_ID"
	ActionIDEnv = "POLYLOOP_ACTION_ID"
	ActionEnv   = "POLYLOOP_ACTION"
)

var (
	_ polyloop.Reconciler     = (*Executor)(nil)
	_ polyloop.ReconcileScope = (*Executor)(nil)
)

// actionEnv is the commands' environment with the action's key, when ctx is
// an action's.
func (e *Executor) actionEnv(ctx context.Context) []string {
	key, ok := polyloop.IdempotencyKeyFromContext(ctx)
	if !ok {
		return e.env
	}
	return append(e.env[:len(e.env):len(e.env)], KeyEnv+"="+key)
}

// Reconciles implements polyloop.ReconcileScope: the shell's actions, when
// Options.Reconcile names a command.
func (e *Executor) Reconciles(a polyloop.Action) bool {
	return e.opts.Reconcile != "" && (a.IsCode() || a.Tool == ToolName)
}

// Reconcile implements polyloop.Reconciler by running Options.Reconcile
// (see there). Without a reconcile command, or for an action that is not
// the shell's, the verdict is unknown.
func (e *Executor) Reconcile(ctx context.Context, q polyloop.ReconcileQuery) (polyloop.Verdict, error) {
	if err := ctx.Err(); err != nil {
		return polyloop.Verdict{}, fmt.Errorf("shellexec: %w", err)
	}
	if !e.Reconciles(q.Action) {
		return polyloop.Verdict{Kind: polyloop.VerdictUnknown, Said: "no reconcile command"}, nil
	}
	action, err := json.Marshal(q.Action)
	if err != nil {
		return polyloop.Verdict{}, fmt.Errorf("shellexec: reconcile: %w", err)
	}
	env := append(e.env[:len(e.env):len(e.env)], KeyEnv+"="+q.Key, RunIDEnv+"="+q.RunID,
		ActionIDEnv+"="+q.ActionID, ActionEnv+"="+string(action))
	out, err := e.reconcileOutput(ctx, env)
	if err != nil {
		return polyloop.Verdict{}, err
	}
	v, err := polyloop.ParseVerdict(out)
	if err != nil {
		return polyloop.Verdict{}, fmt.Errorf("shellexec: reconcile command printed %q: %w", cutText(out), err)
	}
	return v, nil
}

// reconcileOutput runs the reconcile command and returns its stdout; its
// stderr is kept for the error of a command that fails.
func (e *Executor) reconcileOutput(ctx context.Context, env []string) ([]byte, error) {
	if why := e.checkDir(); why != "" {
		return nil, fmt.Errorf("shellexec: reconcile: %s", why)
	}
	ctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(e.opts.Shell, "-c", e.opts.Reconcile)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = e.opts.Dir, env, &limited{&stdout}, &limited{&stderr}
	group, err := procgroup.StartTiedShell(cmd)
	if err != nil {
		return nil, fmt.Errorf("shellexec: reconcile: cannot start the shell %q: %w", e.opts.Shell, err)
	}
	done := make(chan error, 1)
	go func() { done <- group.Wait() }() // the shell exited: what it left in its group is killed
	select {
	case err = <-done:
	case <-ctx.Done():
		group.Signal(syscall.SIGKILL)
		<-done
		return nil, fmt.Errorf("shellexec: reconcile command: %w", ctx.Err())
	}
	if err != nil {
		return nil, fmt.Errorf("shellexec: reconcile command failed (%v): %s", err, cutText(stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}

// limited keeps at most reconcileOutputLimit bytes.
type limited struct{ b *bytes.Buffer }

const reconcileOutputLimit = 64 << 10

func (l *limited) Write(p []byte) (int, error) {
	if room := reconcileOutputLimit - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func cutText(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// Dir is the executor's working directory (absolute).
func (e *Executor) Dir() string { return e.opts.Dir }
