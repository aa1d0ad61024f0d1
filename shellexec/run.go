package shellexec

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/procgroup"
)

// ended is how a command ended.
type ended struct {
	state    *os.ProcessState
	timedOut bool
}

// run executes one command in a fresh shell and maps how it ended to an
// outcome.
func (e *Executor) run(ctx context.Context, command string) (polyloop.ActionOutcome, error) {
	return e.runEnv(ctx, command, e.actionEnv(ctx))
}

// runEnv runs command with env as its environment.
func (e *Executor) runEnv(ctx context.Context, command string, env []string) (polyloop.ActionOutcome, error) {
	if why := e.checkDir(); why != "" {
		return envError("%s", why), nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return envError("cannot create the output pipe: %v", err), nil
	}
	defer r.Close()
	cmd := e.command(command, w, env)
	group, err := procgroup.StartTiedShell(cmd)
	w.Close()
	if err != nil {
		return envError("cannot start the shell %q: %v", e.opts.Shell, err), nil
	}
	out := newCapture(e.opts.OutputLimit, e.opts.DoneSentinel)
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(out, r)
		close(copied)
	}()
	end, ctxErr := e.wait(ctx, cmd, group)
	if ctxErr != nil {
		drain(r, copied, cancelDrainTimeout)
		return polyloop.ActionOutcome{}, fmt.Errorf("shellexec: %w", ctxErr)
	}
	drain(r, copied, drainTimeout)
	return e.outcome(end, out), nil
}

func (e *Executor) checkDir() string {
	fi, err := os.Stat(e.opts.Dir)
	if err != nil {
		return fmt.Sprintf("working directory unusable: %v", err)
	}
	if !fi.IsDir() {
		return fmt.Sprintf("working directory unusable: %s is not a directory", e.opts.Dir)
	}
	return ""
}

func (e *Executor) command(command string, out *os.File, env []string) *exec.Cmd {
	cmd := exec.Command(e.opts.Shell, "-c", command)
	cmd.Dir = e.opts.Dir
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = out, out // the same *os.File: one combined stream
	return cmd
}

// wait waits for the shell to end, killing its process group when the
// timeout passes or ctx is done, and in every case once the shell has
// exited (Group.Wait), so that nothing of the action survives it. It
// returns ctx's error when ctx ended the command.
func (e *Executor) wait(ctx context.Context, cmd *exec.Cmd, group *procgroup.Group) (ended, error) {
	exited := make(chan struct{})
	go func() {
		_ = group.Wait() // the state is in cmd.ProcessState; a non-zero exit is not our error
		close(exited)
	}()
	timer := time.NewTimer(e.opts.Timeout)
	defer timer.Stop()
	var end ended
	var ctxErr error
	select {
	case <-exited:
	case <-timer.C:
		end.timedOut = true
	case <-ctx.Done():
		ctxErr = ctx.Err()
	}
	if ctxErr != nil || end.timedOut {
		group.Signal(syscall.SIGKILL) // stop the shell and its group; Wait kills what is left once it exited
	}
	<-exited
	end.state = cmd.ProcessState
	return end, ctxErr
}

// drain waits for the output stream to end; it ends when the last process
// holding it is gone. A process that escaped the group may hold it open: the
// stream is then abandoned after limit.
func drain(r *os.File, copied <-chan struct{}, limit time.Duration) {
	select {
	case <-copied:
	case <-time.After(limit):
		_ = r.SetReadDeadline(time.Now())
		<-copied
	}
}

func envError(format string, args ...any) polyloop.ActionOutcome {
	return polyloop.ActionOutcome{Status: polyloop.EnvError, Observation: fmt.Sprintf(format, args...)}
}
