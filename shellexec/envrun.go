package shellexec

import (
	"context"
	"fmt"
	"sort"

	"github.com/polyloop/polyloop"
)

// runInEnv runs one command in the run's environment (InEnvironment): a
// fresh shell through Environment.Exec, the timeout enforced by the
// backend. The environment failing is env_error, with the backend's
// diagnostic; a command's exit, whatever it is, is executed.
func (e *Executor) runInEnv(ctx context.Context, command string) (polyloop.ActionOutcome, error) {
	env, ok := polyloop.EnvironmentFromContext(ctx)
	if !ok {
		return envError("shellexec runs its commands inside the run's environment, and this run has none (give the agent an environment)"), nil
	}
	req := polyloop.ExecRequest{
		Argv:    []string{e.opts.Shell, "-c", command},
		Dir:     e.opts.Dir,
		Env:     e.requestEnv(),
		Timeout: e.opts.Timeout,
		// Bytes kept of each stream: room for OutputLimit characters.
		OutputLimit: 4*e.opts.OutputLimit + 4,
	}
	res, err := env.Exec(ctx, req)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return polyloop.ActionOutcome{}, fmt.Errorf("shellexec: %w", cerr)
		}
		return envError("environment exec failed: %v", err), nil
	}
	out := newCapture(e.opts.OutputLimit, e.opts.DoneSentinel)
	_, _ = out.Write(res.Stdout)
	_, _ = out.Write(res.Stderr)
	text, dropped, sawDone := out.result()
	text = polyloop.ValidText(text)
	dropped += int(res.StdoutDropped + res.StderrDropped)
	status, okExit := "", res.ExitCode == 0 && !res.TimedOut
	switch {
	case res.TimedOut:
		status = fmt.Sprintf("[timed out after %s]\n", e.opts.Timeout)
	case res.ExitCode < 0:
		status = "[killed by a signal]\n"
	case res.ExitCode != 0:
		status = fmt.Sprintf("[exit code %d]\n", res.ExitCode)
	}
	if dropped > 0 {
		text += fmt.Sprintf("\n[output truncated: %d characters dropped]", dropped)
	}
	return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: status + text,
		Done: sawDone && okExit, TruncatedChars: dropped}, nil
}

// requestEnv is Env as "NAME=value", sorted (the environment's own
// variables come first: Environment.Exec).
func (e *Executor) requestEnv() []string {
	out := make([]string, 0, len(e.opts.Env))
	for k, v := range e.opts.Env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
