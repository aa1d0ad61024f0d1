package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const deferredAgent = `name: reviewed
model:
  provider: script
  script:
    - {tool: review, args: {summary: "one line"}}
    - text: done
tools:
  deferred:
    - name: review
      description: A person reviews the change.
      parameters: {type: object, properties: {summary: {type: string}}, required: [summary]}
limits: {max_steps: 4}
`

// TestEndlessInputFilesRefused: /dev/zero as the task (@FILE and
// standard input), as system_file, as a delivered observation and as a
// sweep's task file (JSONL and CSV, through a symlink) is refused once its
// bound is read, with a message saying so, instead of filling memory or
// reading for ever.
func TestEndlessInputFilesRefused(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip(err)
	}
	u := currentUser(t)
	dir := t.TempDir()
	env := []string{"POLYLOOP_STORE=sqlite:" + filepath.Join(dir, "store.db"), "NO_COLOR=1"}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("agent.yaml", finalAgent)
	write("system.yaml", strings.Replace(finalAgent, "model:", "system_file: /dev/zero\nmodel:", 1))
	write("deferred.yaml", deferredAgent)
	for _, ext := range []string{"jsonl", "csv"} {
		if err := os.Symlink("/dev/zero", filepath.Join(dir, "tasks."+ext)); err != nil {
			t.Fatal(err)
		}
		write("sweep-"+ext+".yaml", "name: zero\nagents: [agent.yaml]\ntasks: tasks."+ext+"\n")
	}
	run := func(stdin string, args ...string) (int, string) {
		cmd := u.command(dir, env, args...)
		if stdin != "" {
			f, err := os.Open(stdin)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cmd.Stdin = f
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		watchdog := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
		defer watchdog.Stop()
		cmd.Wait()
		return cmd.ProcessState.ExitCode(), out.String()
	}
	if code, out := run("", "run", "deferred.yaml", "task", "--id", "d1", "-q"); code != 3 {
		t.Fatalf("a run waiting for a delivery: exit %d\n%s", code, out)
	}
	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"run", "agent.yaml", "@/dev/zero"}, "the task file /dev/zero is larger than 67108864 bytes"},
		{"/dev/zero", []string{"run", "agent.yaml", "-"}, "the task on standard input is larger than 67108864 bytes"},
		{"", []string{"run", "system.yaml", "task"}, "the system prompt file is larger than 67108864 bytes"},
		{"", []string{"deliver", "d1", "a1", "--status", "executed", "--observation-file", "/dev/zero"}, "the observation file /dev/zero is larger than 8388608 bytes"},
		{"", []string{"sweep", "sweep-jsonl.yaml"}, "longer than 67108864 bytes"},
		{"", []string{"sweep", "sweep-csv.yaml"}, "larger than 8388608 bytes"},
	} {
		code, out := run(tc.stdin, tc.args...)
		if code != exitError || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit %d, want %d and %q:\n%.2000s", tc.args, code, exitError, tc.want, out)
		}
	}
}
