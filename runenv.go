package polyloop

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/polyloop/polyloop/diag"
)

// The run's environment (SPEC §13), on the driver's side. The machine asks
// for it (effectEnv) before the first action of an invocation: the driver
// creates it — from the snapshot the log names last, or from the bare image
// for a run that has none yet, which it then snapshots — or restores it to
// the snapshot a restore_and_replay intent names, and feeds the snapshot
// the environment now is in (envReady). After each action the driver
// snapshots it again, and the settlement names that snapshot: the next
// action starts from it, and a resume between steps restores it.

// EnvironmentFromContext returns the run's environment, when ctx comes from
// the runner's call to ActionExecutor.Execute in a run that has one
// (Agent.Environment). An executor whose tools act inside the environment
// (shellexec with InEnvironment) runs them there.
func EnvironmentFromContext(ctx context.Context) (Environment, bool) {
	s, ok := ctx.Value(actionKey{}).(*actionScope)
	if !ok || s.env == nil {
		return nil, false
	}
	return s.env, true
}

// describeRunID is the run id a description is asked with before any run
// (EnvSpec.Validate wants one); errors never show it.
const describeRunID = "describe"

// describeEnv resolves the agent's environment into its description (the
// snapshot's environment), through the Runner's provider.
func (r *Runner) describeEnv(ctx context.Context, agent Agent) (Agent, error) {
	if agent.Environment == nil {
		agent.envDesc = nil
		return agent, nil
	}
	if r.Environments == nil {
		return agent, fmt.Errorf("%w: the agent asks for an environment, but Runner.Environments is nil", ErrInvalidConfig)
	}
	spec := *agent.Environment
	placeholder := spec.RunID == ""
	if placeholder {
		spec.RunID = describeRunID // Validate wants one; the description does not hold it
	}
	d, err := r.Environments.Describe(ctx, spec)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return agent, cerr
		}
		var oe *EnvOpError
		if placeholder && errors.As(err, &oe) && oe.RunID == describeRunID {
			// The error is the description's, of no run: not of a run
			// named by the placeholder.
			c := *oe
			c.RunID, c.Op = "", "describe"
			err = &c
		}
		return agent, fmt.Errorf("%w: environment: %w", ErrInvalidConfig, err)
	}
	agent.envDesc = &d
	return agent, nil
}

// validateEnv checks the tools' replay policies against the environment: a
// restore_and_replay tool needs an environment without network, whose
// effects cannot have left it.
func validateEnv(agent Agent) []error {
	var errs []error
	for i, t := range agent.Tools {
		if t.Replay != RestoreAndReplay {
			continue
		}
		switch {
		case agent.Environment == nil:
			errs = append(errs, fmt.Errorf("tools[%d] %q: replay policy restore_and_replay needs an environment (Agent.Environment)", i, t.Name))
		case agent.Environment.Network.Normalize() != NetworkNone:
			errs = append(errs, fmt.Errorf("tools[%d] %q: replay policy restore_and_replay needs an environment without network (its effects may have left it)", i, t.Name))
		}
	}
	return errs
}

// EnvDestroyTimeout bounds the destruction of a run's environment at the
// end of an invocation, on a context detached from the run's cancellation.
const EnvDestroyTimeout = 30 * time.Second

// prepareEnv brings the run's environment to the state the machine asked
// for (effectEnv) and feeds it; a failure of the environment is fed as
// such (the action's env_error). A cancellation writes the facts pending
// and returns.
func (d *driver) prepareEnv(ctx context.Context, e effect) error {
	if err := ctx.Err(); err != nil {
		return d.keepFacts(ctx, err)
	}
	ref, err := d.envAt(ctx, e.envFrom)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return d.keepFacts(ctx, cerr)
		}
		if !EnvCannotServe(err) { // a malformed request, a backend's bug: not the environment's state
			return d.keepFacts(ctx, err)
		}
		d.m.envFailed(e.envFor, err)
		return nil
	}
	d.m.envReady(ref)
	return nil
}

// envAt makes the environment hold from — created from it, or restored to
// it — or, with from empty, creates it from the image and snapshots it. It
// returns the snapshot the environment is now in.
func (d *driver) envAt(ctx context.Context, from EnvSnapshot) (EnvSnapshot, error) {
	switch {
	case d.env == nil:
		spec := *d.envSpec
		spec.RunID, spec.From = d.runID, from
		if from == "" {
			spec.Files = append(append([]EnvFile(nil), spec.Files...), TaskFiles(d.m.st.snap.Task)...)
		}
		env, err := d.r.Environments.Create(ctx, spec)
		if err != nil {
			return "", err
		}
		d.env = env
	case from != "":
		if err := d.env.Restore(ctx, from); err != nil {
			return "", err
		}
	}
	if from != "" {
		return from, nil
	}
	return d.env.Snapshot(ctx)
}

// envAfter snapshots the environment after an executed action: the
// snapshot its settlement names. An action that did not execute left the
// environment as its intent names it, and an env_error ends the run: no
// snapshot (the settlement names none). When the snapshot cannot be taken
// because the environment cannot serve, the outcome becomes env_error (the
// action's own outcome kept as its audit); any other error, a cancellation
// included, is returned, leaving the action of unknown outcome — restored
// and run again on resume.
func (d *driver) envAfter(ctx context.Context, out *ActionOutcome) (EnvSnapshot, error) {
	if d.env == nil || out.Status != Executed {
		return "", nil
	}
	ref, err := d.env.Snapshot(ctx)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return "", cerr
		}
		if !EnvCannotServe(err) {
			return "", err
		}
		*out = ActionOutcome{Status: EnvError, Observation: fmt.Sprintf("the environment's snapshot after the action could not be taken: %v (the action's own outcome: %s)",
			err, out.Status)}
		return "", nil
	}
	return ref, nil
}

// closeEnv destroys the invocation's environment, if it made one; its
// snapshots stay (the log names them).
func (d *driver) closeEnv(ctx context.Context) {
	if d.env == nil {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), EnvDestroyTimeout)
	defer cancel()
	_ = d.env.Destroy(dctx) // idempotent; an orphan left here is pruned by its label
	d.env = nil
}

// envFailureText is the diagnostic of an environment that could not be
// brought to the state an action starts from: which operation failed.
func envFailureText(err error) string {
	if errors.Is(err, errEnvBrokenInStep) {
		return "not run: " + diag.From(err).Message
	}
	op := "prepare"
	var oe *EnvOpError
	if errors.As(err, &oe) {
		op = oe.Op
	}
	return fmt.Sprintf("environment %s failed before the action: %s", op, diag.From(err).Message)
}

// LastEnvSnapshot is the last snapshot of the run's environment the log
// names (an intent's or a settlement's): the world the run left when it
// finished, or the durable state a resume restores. Empty for a run
// without an environment.
func LastEnvSnapshot(log RunLog) EnvSnapshot {
	var ref EnvSnapshot
	for _, r := range log.Records {
		var s EnvSnapshot
		switch b := r.Body.(type) {
		case *ActionIntent:
			s = b.EnvSnapshot
		case *ActionResult:
			s = b.EnvSnapshot
		case *StepCompleted:
			s = b.EnvSnapshot
		}
		if s != "" {
			ref = s
		}
	}
	return ref
}

// EnvSnapshotAt is the snapshot of the run's environment at the end of step
// (the last one its records up to that step's record name): the world a
// fork at that step starts from, and what `polyloop env export --step`
// gives. Empty when the log names none by then.
func EnvSnapshotAt(log RunLog, step int) EnvSnapshot {
	ref, _ := EnvSnapshotIn(log.Stream(), step) // a log read: no read fails
	return ref
}

// EnvSnapshotIn is EnvSnapshotAt of a log read as a stream (StreamLog): it
// reads no further than the records of the steps after step. The error is
// the stream's.
func EnvSnapshotIn(records *LogStream, step int) (EnvSnapshot, error) {
	var ref EnvSnapshot
	for records.Next() {
		r := records.Record()
		var s EnvSnapshot
		switch b := r.Body.(type) {
		case *ActionIntent:
			if b.Step > step {
				return ref, nil
			}
			s = b.EnvSnapshot
		case *ActionResult:
			if b.Step > step {
				return ref, nil
			}
			s = b.EnvSnapshot
		case *StepCompleted:
			if b.Step > step {
				return ref, nil
			}
			s = b.EnvSnapshot
		}
		if s != "" {
			ref = s
		}
	}
	return ref, records.Err()
}

// TaskFilePrefix marks a task's metadata key that is a file to copy into
// the run's environment when it is created: "file:/work/input.txt" and
// the file's content as its value. The files are the task's (in the
// snapshot's task, and its hash), not the environment's description.
const TaskFilePrefix = "file:"

// TaskFiles are the files a task carries for the run's environment
// (TaskFilePrefix), sorted by path.
func TaskFiles(task Task) []EnvFile {
	var out []EnvFile
	for k, v := range task.Meta {
		if p, ok := strings.CutPrefix(k, TaskFilePrefix); ok && path.IsAbs(p) {
			out = append(out, EnvFile{Path: path.Clean(p), Content: []byte(v)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
