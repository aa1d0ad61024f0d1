package shellexec_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/shellexec"
)

func newExec(t *testing.T, opts shellexec.Options) *shellexec.Executor {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	e, err := shellexec.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func code(c string) polyloop.Action { return polyloop.Action{Code: c, Lang: "bash"} }

func bashTool(command string) polyloop.Action {
	args, _ := json.Marshal(map[string]string{"command": command})
	return polyloop.Action{Tool: "bash", Args: args, CallID: "call-1"}
}

func execute(t *testing.T, e *shellexec.Executor, a polyloop.Action) polyloop.ActionOutcome {
	t.Helper()
	out, err := e.Execute(context.Background(), a)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	return out
}

func TestExitStatus(t *testing.T) {
	t.Parallel()
	e := newExec(t, shellexec.Options{})
	cases := []struct {
		name, command, want string
	}{
		{"success", "echo hello", "hello\n"},
		{"combined streams", "echo out; echo err >&2", "out\nerr\n"},
		{"non-zero exit", "echo oops; exit 3", "[exit code 3]\noops\n"},
		{"failing command", "ls /does/not/exist 2>/dev/null", "[exit code 2]\n"},
		{"killed by a signal", "kill -TERM $$", "[killed by SIGTERM]\n"},
		{"killed by SIGKILL", "kill -KILL $$", "[killed by SIGKILL]\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := execute(t, e, code(tc.command))
			want := polyloop.ActionOutcome{Status: polyloop.Executed, Observation: tc.want}
			if out != want {
				t.Errorf("outcome = %+v, want %+v", out, want)
			}
		})
	}
}

func TestBashTool(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := newExec(t, shellexec.Options{Dir: dir})
	out := execute(t, e, bashTool("pwd"))
	real, _ := filepath.EvalSymlinks(dir)
	if out.Status != polyloop.Executed || strings.TrimSpace(out.Observation) != real {
		t.Errorf("outcome = %+v, want executed in %s", out, real)
	}
}

func TestWorkingDirectoryIsTheState(t *testing.T) {
	t.Parallel()
	e := newExec(t, shellexec.Options{})
	execute(t, e, code("echo kept > file.txt; X=lost; cd /"))
	out := execute(t, e, code(`cat file.txt; echo "x=[$X]"; pwd | grep -qx / && echo moved || echo stayed`))
	if out.Observation != "kept\nx=[]\nstayed\n" {
		t.Errorf("second action saw %q", out.Observation)
	}
}

func TestRefusedActions(t *testing.T) {
	t.Parallel()
	e := newExec(t, shellexec.Options{})
	for name, a := range map[string]polyloop.Action{
		"other language": {Code: "print(1)", Lang: "python"},
		"empty code":     {Code: "  \n", Lang: "bash"},
		"unknown tool":   {Tool: "python", Args: json.RawMessage(`{"command":"ls"}`)},
		"missing arg":    {Tool: "bash", Args: json.RawMessage(`{}`)},
		"wrong type":     {Tool: "bash", Args: json.RawMessage(`{"command":["ls"]}`)},
		"extra property": {Tool: "bash", Args: json.RawMessage(`{"command":"ls","cwd":"/"}`)},
		"malformed":      {Tool: "bash", Args: json.RawMessage(`{"command":`)},
		"empty command":  {Tool: "bash", Args: json.RawMessage(`{"command":" "}`)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out := execute(t, e, a)
			if out.Status != polyloop.NotExecuted || out.Observation == "" {
				t.Errorf("outcome = %+v, want not_executed with a reason", out)
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	e := newExec(t, shellexec.Options{Timeout: 300 * time.Millisecond})
	start := time.Now()
	out := execute(t, e, code("echo started; sleep 30"))
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("took %v", elapsed)
	}
	want := polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "[timed out after 300ms]\nstarted\n"}
	if out != want {
		t.Errorf("outcome = %+v, want %+v", out, want)
	}
}

func TestOutputCap(t *testing.T) {
	t.Parallel()
	e := newExec(t, shellexec.Options{OutputLimit: 10})
	out := execute(t, e, code("printf 'ééééééééééééééé'")) // 15 characters, 30 bytes
	if out.TruncatedChars != 5 || !strings.HasPrefix(out.Observation, strings.Repeat("é", 10)+"\n[output truncated: 5 ") {
		t.Errorf("outcome = %+v, want 10 characters kept and 5 dropped", out)
	}
	out = execute(t, e, code("head -c 1000000 /dev/zero | tr '\\0' a; exit 1"))
	if out.TruncatedChars != 1000000-10 || !strings.HasPrefix(out.Observation, "[exit code 1]\naaaaaaaaaa\n") {
		t.Errorf("large output: truncated %d, observation %q", out.TruncatedChars, out.Observation)
	}
}

func TestEnvironmentIsolation(t *testing.T) {
	t.Setenv("FAKE_API_KEY", "planted-secret")
	t.Setenv("FAKE_ALLOWED", "visible-value")
	dir := t.TempDir()
	e := newExec(t, shellexec.Options{
		Dir:      dir,
		EnvAllow: []string{"FAKE_ALLOWED", "FAKE_UNSET"},
		Env:      map[string]string{"EXPLICIT": "given", "LANG": "C"},
	})
	out := execute(t, e, code("env"))
	if strings.Contains(out.Observation, "planted-secret") || strings.Contains(out.Observation, "FAKE_API_KEY") {
		t.Fatalf("a host variable leaked:\n%s", out.Observation)
	}
	got := map[string]string{}
	for line := range strings.Lines(out.Observation) {
		k, v, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "=")
		got[k] = v
	}
	for k, want := range map[string]string{
		"FAKE_ALLOWED": "visible-value", "EXPLICIT": "given", "LANG": "C",
		"PATH": shellexec.DefaultPath, "HOME": dir,
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	if _, ok := got["FAKE_UNSET"]; ok {
		t.Error("an allowed variable unset on the host appeared")
	}
	if d, _ := json.Marshal(e.Describe()); strings.Contains(string(d), "given") || strings.Contains(string(d), "visible-value") {
		t.Errorf("Describe holds environment values: %s", d)
	}
}

func TestEnvError(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string]shellexec.Options{
		"missing directory": {Dir: filepath.Join(t.TempDir(), "gone")},
		"not a directory":   {Dir: file},
		"missing shell":     {Shell: "/nonexistent/bash"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newExec(t, opts)
			for _, a := range []polyloop.Action{code("echo hi"), bashTool("echo hi")} {
				if out := execute(t, e, a); out.Status != polyloop.EnvError || out.Observation == "" {
					t.Errorf("outcome = %+v, want env_error with a reason", out)
				}
			}
		})
	}
}

func TestDoneSentinel(t *testing.T) {
	t.Parallel()
	e := newExec(t, shellexec.Options{DoneSentinel: "POLYLOOP_SUBMIT", OutputLimit: 20})
	cases := []struct {
		command string
		done    bool
	}{
		{"echo POLYLOOP_SUBMIT; echo the answer", true},
		{"echo work; printf '  POLYLOOP_SUBMIT  '", true},
		{"head -c 100 /dev/zero | tr '\\0' a; echo; echo POLYLOOP_SUBMIT", true}, // past the cap
		{"echo POLYLOOP_SUBMIT; exit 1", false},
		{"echo xPOLYLOOP_SUBMIT", false},
		{"echo POLYLOOP_SUBMITTED", false},
		{"echo nothing", false},
	}
	for _, tc := range cases {
		out := execute(t, e, code(tc.command))
		if out.Done != tc.done || out.Status != polyloop.Executed {
			t.Errorf("%q: outcome %+v, want done=%v", tc.command, out, tc.done)
		}
	}
	out := execute(t, e, code("echo POLYLOOP_SUBMIT; echo ok"))
	if out.Observation != "POLYLOOP_SUBMIT\nok\n" {
		t.Errorf("observation = %q: the output is not verbatim", out.Observation)
	}
}

// gone reports whether the process pid has ended (it no longer exists, or
// is a zombie waiting for a reaper).
func gone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == syscall.ESRCH
	}
	// The state follows the parenthesised command name.
	i := strings.LastIndexByte(string(stat), ')')
	return i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d is still running", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(path)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && pid > 0 {
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

// waitComm waits until the process pid runs the program name.
func waitComm(t *testing.T, pid int, name string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if strings.TrimSpace(string(comm)) == name && !gone(pid) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d (%q) is not a running %s", pid, comm, name)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCancellationKillsTheProcessGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := newExec(t, shellexec.Options{Dir: dir})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		out polyloop.ActionOutcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		// A grandchild: the shell starts a subshell, which starts sh, which
		// becomes sleep; the pid file holds sleep's pid.
		out, err := e.Execute(ctx, code("(sh -c 'echo $$ > pid.tmp && mv pid.tmp pid && exec sleep 30'; echo never) & wait"))
		done <- result{out, err}
	}()
	pid := readPid(t, filepath.Join(dir, "pid"))
	waitComm(t, pid, "sleep")
	cancel()
	select {
	case r := <-done:
		if !errors.Is(r.err, context.Canceled) {
			t.Fatalf("err = %v (outcome %+v), want context.Canceled", r.err, r.out)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Execute did not return after cancellation")
	}
	waitGone(t, pid)
}

func TestBackgroundJobDoesNotOutliveItsAction(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := newExec(t, shellexec.Options{Dir: dir})
	start := time.Now()
	out := execute(t, e, code("sleep 30 & echo $! > pid; echo started"))
	if elapsed := time.Since(start); elapsed > 1500*time.Millisecond {
		t.Errorf("Execute waited %v for a background job", elapsed)
	}
	if out.Observation != "started\n" {
		t.Errorf("observation = %q", out.Observation)
	}
	waitGone(t, readPid(t, filepath.Join(dir, "pid")))
}

func TestDeadlineExceeded(t *testing.T) {
	t.Parallel()
	e := newExec(t, shellexec.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := e.Execute(ctx, code("sleep 30"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	if _, err := e.Execute(ctx, code("echo late")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("done context: err = %v, want context.DeadlineExceeded", err)
	}
}

func TestOptionsAndDescribe(t *testing.T) {
	t.Parallel()
	if _, err := shellexec.New(shellexec.Options{}); err == nil {
		t.Error("an empty Dir was accepted")
	}
	if _, err := shellexec.New(shellexec.Options{Dir: ".", Timeout: -1}); err == nil {
		t.Error("a negative timeout was accepted")
	}
	if _, err := shellexec.New(shellexec.Options{Dir: ".", ToolReplay: "maybe"}); err == nil {
		t.Error("an unknown replay policy was accepted")
	}
	a := newExec(t, shellexec.Options{EnvAllow: []string{"B", "A"}})
	b := newExec(t, shellexec.Options{EnvAllow: []string{"A", "B"}})
	if da, db := a.Describe(), b.Describe(); da.Name != "shellexec" || string(da.Config) != string(db.Config) {
		t.Errorf("Describe differs with the working directory or the order of EnvAllow:\n%s\n%s", da.Config, db.Config)
	}
	specs := a.ToolSpecs()
	if len(specs) != 1 || specs[0].Name != "bash" || specs[0].Replay != polyloop.NeverReplay ||
		!json.Valid(specs[0].Parameters) {
		t.Errorf("ToolSpecs = %+v", specs)
	}
}

func TestEscapedProcessDoesNotHangExecute(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid on this system")
	}
	dir := t.TempDir()
	e := newExec(t, shellexec.Options{Dir: dir})
	start := time.Now()
	// The escaped process keeps the output stream open.
	out := execute(t, e, code("setsid sh -c 'echo $$ > pid.tmp; mv pid.tmp pid; exec sleep 30' & while [ ! -s pid ]; do sleep 0.01; done; echo left"))
	pid := readPid(t, filepath.Join(dir, "pid"))
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if elapsed := time.Since(start); elapsed > 4*time.Second {
		t.Errorf("Execute took %v", elapsed)
	}
	if out.Status != polyloop.Executed || !strings.HasPrefix(out.Observation, "left\n") {
		t.Errorf("outcome = %+v", out)
	}
}
