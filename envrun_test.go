package polyloop_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/codeparser"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/shellexec"
	"github.com/polyloop/polyloop/toolcallparser"
)

// fakeEnvs is an environment provider whose failures the test chooses:
// Create, Exec and the n-th Snapshot (counting from 1).
type fakeEnvs struct {
	createErr  error
	snapErr    error // with failSnapAt: the error of that snapshot
	exec       polyloop.ExecResult
	execErr    error
	failSnapAt int
	network    polyloop.NetworkPolicy // the description's; zero: none

	mu    sync.Mutex
	snaps int
}

func (p *fakeEnvs) Describe(context.Context, polyloop.EnvSpec) (polyloop.EnvDescription, error) {
	return polyloop.EnvDescription{Backend: "fake", Image: "sha256:" + strings.Repeat("0", 64), Network: p.network.Normalize()}, nil
}

func (p *fakeEnvs) Create(_ context.Context, spec polyloop.EnvSpec) (polyloop.Environment, error) {
	if p.createErr != nil {
		return nil, &polyloop.EnvOpError{Op: "create", Backend: "fake", RunID: spec.RunID, Kind: polyloop.ErrEnvFailed, Err: p.createErr}
	}
	return &fakeEnv{p: p}, nil
}

type fakeEnv struct{ p *fakeEnvs }

func (e *fakeEnv) Description() polyloop.EnvDescription {
	d, _ := e.p.Describe(context.Background(), polyloop.EnvSpec{})
	return d
}
func (e *fakeEnv) Exec(context.Context, polyloop.ExecRequest) (polyloop.ExecResult, error) {
	return e.p.exec, e.p.execErr
}
func (e *fakeEnv) CopyIn(context.Context, string, io.Reader) error  { return nil }
func (e *fakeEnv) CopyOut(context.Context, string, io.Writer) error { return nil }
func (e *fakeEnv) Snapshot(context.Context) (polyloop.EnvSnapshot, error) {
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	e.p.snaps++
	if e.p.snaps == e.p.failSnapAt && e.p.snapErr != nil {
		return "", e.p.snapErr
	}
	if e.p.snaps == e.p.failSnapAt {
		return "", &polyloop.EnvOpError{Op: "snapshot", Backend: "fake", Kind: polyloop.ErrEnvFailed, Err: errors.New("disk full")}
	}
	return polyloop.EnvSnapshot(fmt.Sprintf("sha256:%064d", e.p.snaps)), nil
}
func (e *fakeEnv) Restore(context.Context, polyloop.EnvSnapshot) error { return nil }
func (e *fakeEnv) Destroy(context.Context) error                       { return nil }

// envRunner is a runner whose shell runs in p's environments, scripted
// with a call of make, a call of make test, then an answer.
func envRunner(t *testing.T, p *fakeEnvs, store polyloop.Store) (*polyloop.Runner, polyloop.Agent) {
	t.Helper()
	ex, err := shellexec.New(shellexec.Options{InEnvironment: true})
	if err != nil {
		t.Fatal(err)
	}
	r := &polyloop.Runner{Model: scriptmodel.New(scriptmodel.Call("c1", shellexec.ToolName, map[string]string{"command": "make"}),
		scriptmodel.Call("c2", shellexec.ToolName, map[string]string{"command": "make test"}), scriptmodel.Reply("done")),
		Parser: toolcallparser.New(toolcallparser.Options{}), Executor: ex, Store: store, Environments: p}
	return r, polyloop.Agent{Name: "env", Limits: polyloop.Limits{MaxSteps: 4}, Environment: &polyloop.EnvSpec{Image: "img"}}
}

func envRun(t *testing.T, p *fakeEnvs) (polyloop.RunResult, polyloop.RunLog) {
	t.Helper()
	store := memstore.New()
	r, agent := envRunner(t, p, store)
	res, err := r.Run(context.Background(), "ref", agent, polyloop.Task{Input: "build"})
	if err != nil {
		t.Fatal(err)
	}
	log, err := polyloop.ReadLog(context.Background(), store, "ref")
	if err != nil {
		t.Fatal(err)
	}
	return res, log
}

// A log of format 1.3 with an environment (testdata/logs, written once by
// this test with POLYLOOP_WRITE_V13_LOG set) reads, plans and resumes from
// every prefix: a prefix that ends with an action's intent plans
// restore_and_replay from the snapshot the intent names; every resume
// finishes completed, in an environment restored from the log's last
// snapshot.
func TestLogFormat13EnvironmentResumes(t *testing.T) {
	const file = "testdata/logs/v1.3-environment.jsonl"
	if os.Getenv("POLYLOOP_WRITE_V13_LOG") != "" {
		_, log := envRun(t, &fakeEnvs{})
		data, err := polyloop.EncodeRecords(log.Records)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := readJSONL(t, file)
	if v := logFormatOf(old); v != "1.3" {
		t.Fatalf("the stored log has format %s", v)
	}
	if snap, _ := old.Snapshot(); snap.Environment == nil || snap.Environment.Backend != "fake" {
		t.Fatalf("the stored log's snapshot has environment %+v", snap.Environment)
	}
	ctx := context.Background()
	for k := 1; k < len(old.Records); k++ {
		prefix := polyloop.RunLog{RunID: "ref", Records: old.Records[:k]}
		plan, err := polyloop.PlanResume(prefix)
		if err != nil {
			t.Fatalf("prefix %d: %v", k, err)
		}
		if in, ok := prefix.Records[k-1].Body.(*polyloop.ActionIntent); ok {
			if in.EnvSnapshot == "" || plan.Action != polyloop.PlanRestoreAndReplay || plan.EnvSnapshot != in.EnvSnapshot {
				t.Fatalf("prefix %d ends with intent %s (snapshot %q): plan %+v", k, in.ActionID, in.EnvSnapshot, plan)
			}
		}
		store := memstore.New()
		store.Put("ref", old.Records[:k])
		r, agent := envRunner(t, &fakeEnvs{}, store)
		res, err := r.Resume(ctx, "ref", agent)
		if err != nil || res.StopReason != polyloop.StopCompleted {
			t.Fatalf("resume of the prefix of %d records: %+v, %v", k, res, err)
		}
	}
}

func settledStep(t *testing.T, log polyloop.RunLog) *polyloop.StepCompleted {
	t.Helper()
	for _, r := range log.Records {
		if b, ok := r.Body.(*polyloop.StepCompleted); ok && b.Outcome != nil {
			return b
		}
	}
	t.Fatal("no settled step")
	return nil
}

// TestEnvFailuresKeepTheirMeaning: an environment that cannot be created,
// an exec the backend cannot run and a snapshot after the action that
// cannot be taken are env_error, each with a diagnostic that says which;
// a command's non-zero exit is executed.
func TestEnvFailuresKeepTheirMeaning(t *testing.T) {
	for _, tc := range []struct {
		name   string
		p      *fakeEnvs
		status polyloop.ActionStatus
		text   string
	}{
		{"create", &fakeEnvs{createErr: errors.New("daemon down")}, polyloop.EnvError, "environment create failed before the action"},
		{"first snapshot", &fakeEnvs{failSnapAt: 1}, polyloop.EnvError, "environment snapshot failed before the action"},
		{"exec", &fakeEnvs{execErr: &polyloop.EnvOpError{Op: "exec", Backend: "fake", Kind: polyloop.ErrEnvLost}}, polyloop.EnvError, "environment exec failed"},
		{"snapshot after", &fakeEnvs{failSnapAt: 2}, polyloop.EnvError, "snapshot after the action could not be taken"},
		{"non-zero exit", &fakeEnvs{exec: polyloop.ExecResult{ExitCode: 3, Stderr: []byte("no rule")}}, polyloop.Executed, "[exit code 3]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, log := envRun(t, tc.p)
			sc := settledStep(t, log)
			text := sc.Observation + sc.Audit
			if sc.Outcome.Status != tc.status || !strings.Contains(text, tc.text) {
				t.Fatalf("status %s, observation %q, audit %q; want %s with %q", sc.Outcome.Status, sc.Observation, sc.Audit, tc.status, tc.text)
			}
			if want := polyloop.StopEnvError; tc.status == polyloop.EnvError && res.StopReason != want {
				t.Fatalf("stop reason %s, want %s", res.StopReason, want)
			}
			if _, err := polyloop.PlanResume(log); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestEnvBugsAreNotEnvErrors: an environment error that does not say the
// environment cannot serve (a malformed request, a backend's bug) is the
// run's error, returned by Run, not an action's env_error the log would
// have to justify (SPEC §3); the action stays of unknown outcome.
func TestEnvBugsAreNotEnvErrors(t *testing.T) {
	bug := &polyloop.EnvOpError{Op: "snapshot", Backend: "fake", Kind: polyloop.ErrEnvInvalid, Err: errors.New("bad path")}
	for name, p := range map[string]*fakeEnvs{
		"before the action": {failSnapAt: 1, snapErr: bug},
		"after the action":  {failSnapAt: 2, snapErr: bug},
	} {
		t.Run(name, func(t *testing.T) {
			store := memstore.New()
			r, agent := envRunner(t, p, store)
			if _, err := r.Run(context.Background(), "ref", agent, polyloop.Task{Input: "build"}); !errors.Is(err, polyloop.ErrEnvInvalid) {
				t.Fatalf("Run: %v, want the backend's ErrEnvInvalid", err)
			}
			log, _ := polyloop.ReadLog(context.Background(), store, "ref")
			for _, rec := range log.Records {
				if sc, ok := rec.Body.(*polyloop.StepCompleted); ok && sc.Outcome != nil && sc.Outcome.Status == polyloop.EnvError {
					t.Fatalf("an env_error was recorded for a backend's bug: %+v", sc)
				}
			}
		})
	}
}

// TestEnvPolicyNeedsAnIsolatedEnvironment: restore_and_replay is refused
// for an agent without an environment, or with one that has network; an
// agent with an environment needs Runner.Environments.
func TestEnvPolicyNeedsAnIsolatedEnvironment(t *testing.T) {
	tools := []polyloop.ToolSpec{{Name: "box", Replay: polyloop.RestoreAndReplay}}
	for _, tc := range []struct {
		name  string
		env   *polyloop.EnvSpec
		envs  polyloop.EnvProvider
		field string
	}{
		{"no environment", nil, &fakeEnvs{}, "needs an environment"},
		{"network", &polyloop.EnvSpec{Image: "img", Network: polyloop.NetworkOpen}, &fakeEnvs{}, "without network"},
		{"no provider", &polyloop.EnvSpec{Image: "img"}, nil, "Runner.Environments is nil"},
	} {
		r := &polyloop.Runner{Model: scriptmodel.New(scriptmodel.Reply("x")), Parser: toolcallparser.New(toolcallparser.Options{}),
			Executor: noopExec{}, Store: memstore.New(), Environments: tc.envs}
		_, err := r.Run(context.Background(), "", polyloop.Agent{Name: "a", Tools: tools, Environment: tc.env}, polyloop.Task{})
		if !errors.Is(err, polyloop.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

type noopExec struct{}

func (noopExec) Execute(context.Context, polyloop.Action) (polyloop.ActionOutcome, error) {
	return polyloop.ActionOutcome{Status: polyloop.Executed}, nil
}

// A code action runs inside the run's environment like a tool action: in
// an environment without network its intent is restore_and_replay and names
// the snapshot before it, so a crash inside it is replayed after a restore
// (not resume_state_unknown); with network it stays never_replay.
func TestCodeActionInEnvironmentRestoresAndReplays(t *testing.T) {
	ctx := context.Background()
	for _, network := range []polyloop.NetworkPolicy{polyloop.NetworkNone, polyloop.NetworkOpen} {
		t.Run(string(network), func(t *testing.T) {
			p := &fakeEnvs{network: network}
			runner := func(store polyloop.Store) *polyloop.Runner {
				opts := shellexec.Options{InEnvironment: true}
				if network == polyloop.NetworkOpen {
					opts.ToolReplay = polyloop.NeverReplay // its bash tool's effects may leave
				}
				ex, err := shellexec.New(opts)
				if err != nil {
					t.Fatal(err)
				}
				return &polyloop.Runner{Model: scriptmodel.New(scriptmodel.Reply("```bash\necho hi >> f\n```"), scriptmodel.Reply("FINAL: ok")),
					Parser: codeparser.New(codeparser.Options{FinalMarker: "FINAL:"}), Executor: ex, Store: store, Environments: p}
			}
			agent := polyloop.Agent{Name: "code", Limits: polyloop.Limits{MaxSteps: 3}, Environment: &polyloop.EnvSpec{Image: "img", Network: network}}
			store := memstore.New()
			if _, err := runner(store).Run(ctx, "ref", agent, polyloop.Task{Input: "go"}); err != nil {
				t.Fatal(err)
			}
			log, err := polyloop.ReadLog(ctx, store, "ref")
			if err != nil {
				t.Fatal(err)
			}
			k := -1
			var in *polyloop.ActionIntent
			for i, r := range log.Records {
				if b, ok := r.Body.(*polyloop.ActionIntent); ok {
					k, in = i+1, b
					break
				}
			}
			if in == nil || in.EnvSnapshot == "" {
				t.Fatalf("no code action intent naming a snapshot: %+v", in)
			}
			want, plan := polyloop.RestoreAndReplay, polyloop.PlanRestoreAndReplay
			if network == polyloop.NetworkOpen {
				want, plan = polyloop.NeverReplay, polyloop.PlanReconcile
			}
			if in.Replay != want {
				t.Fatalf("code action intent recorded %s, want %s", in.Replay, want)
			}
			prefix := polyloop.RunLog{RunID: "ref", Records: log.Records[:k]}
			got, err := polyloop.PlanResume(prefix)
			if err != nil || got.Action != plan {
				t.Fatalf("plan of the log cut after the code action's intent: %+v, %v", got, err)
			}
			if network == polyloop.NetworkOpen {
				return
			}
			if got.EnvSnapshot != in.EnvSnapshot {
				t.Fatalf("plan restores %s, the intent names %s", got.EnvSnapshot, in.EnvSnapshot)
			}
			store = memstore.New()
			store.Put("ref", log.Records[:k])
			res, err := runner(store).Resume(ctx, "ref", agent)
			if err != nil || res.StopReason != polyloop.StopCompleted {
				t.Fatalf("resume: %+v, %v", res, err)
			}
		})
	}
}

// A mount whose source does not exist fails the spec's Validate, which
// every backend's Describe calls: the Runner refuses the run before it
// starts (no model call is paid for a run its first action cannot serve).
func TestEnvSpecMissingMountSource(t *testing.T) {
	spec := polyloop.EnvSpec{RunID: "r", Image: "img", Mounts: []polyloop.EnvMount{{Source: filepath.Join(t.TempDir(), "nonexist"), Target: "/data"}}}
	if err := spec.Validate(); err == nil || !strings.Contains(err.Error(), "cannot be mounted") {
		t.Fatalf("Validate: %v", err)
	}
	spec.Mounts[0].Source = t.TempDir()
	if err := spec.Validate(); err != nil {
		t.Fatalf("Validate of an existing source: %v", err)
	}
}
