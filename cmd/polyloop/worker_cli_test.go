package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polyloop/polyloop/sweepqueue"
)

// cliChildEnv makes this test binary run the polyloop command line its
// value holds (JSON arguments): a worker process.
const cliChildEnv = "POLYLOOP_TEST_CLI_CHILD"

func init() {
	if v := os.Getenv(cliChildEnv); v != "" {
		var args []string
		if err := json.Unmarshal([]byte(v), &args); err != nil {
			os.Exit(2)
		}
		os.Exit(execute(args, nil, os.Stdout, os.Stderr))
	}
}

// startCLI starts polyloop args in a child process.
func startCLI(t *testing.T, args ...string) *fleetChild {
	b, _ := json.Marshal(args)
	return startChild(t, cliChildEnv+"="+string(b))
}

const queueAgent = `name: %s
model:
  provider: script
  script:
    - text: "%s"
limits: {max_steps: 2}
`

// The queue from the command line: polyloop sweep --queue enqueues two
// sweeps; the agent of the second changes before a worker runs it; the
// worker completes the first sweep's jobs and cancels the second's at
// their first attempt (the sweep cannot be rebuilt as it was), which
// polyloop workers and polyloop stats --sweep list with the reason.
func TestWorkerCommandLine(t *testing.T) {
	dsn := fleetDatabase(t)
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("tasks.jsonl", `{"id": "a", "input": "2+2?", "target": "4"}`+"\n"+`{"id": "b", "input": "3+1?", "target": "4"}`+"\n")
	write("four.yaml", fmt.Sprintf(queueAgent, "four", "4"))
	write("five.yaml", fmt.Sprintf(queueAgent, "five", "5"))
	write("one.yaml", "name: one\nagents: [four.yaml]\ntasks: tasks.jsonl\nscorers: [{kind: exact}]\n")
	write("two.yaml", "name: two\nagents: [five.yaml]\ntasks: tasks.jsonl\nscorers: [{kind: exact}]\n")
	run := func(args ...string) (string, string, int) {
		var stdout, stderr bytes.Buffer
		code := execute(args, nil, &stdout, &stderr)
		return stdout.String(), stderr.String(), code
	}
	for _, f := range []string{"one.yaml", "two.yaml"} {
		out, errOut, code := run("sweep", filepath.Join(dir, f), "--queue", dsn)
		if code != 0 || !strings.Contains(out, "2 jobs enqueued") || !strings.Contains(out, "polyloop worker --queue") {
			t.Fatalf("sweep %s --queue: exit %d\n%s%s", f, code, out, errOut)
		}
	}
	out, _, code := run("sweep", filepath.Join(dir, "one.yaml"), "--queue", dsn)
	if code != 0 || !strings.Contains(out, "0 jobs enqueued, 2 runs already had one") {
		t.Fatalf("second enqueue: exit %d\n%s", code, out)
	}
	write("five.yaml", fmt.Sprintf(queueAgent, "five", "55"))
	w := startCLI(t, "worker", "--queue", dsn, "--concurrency", "2")
	var st sweepqueue.Status
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out, errOut, code := run("workers", "--queue", dsn, "--json")
		if code != 0 {
			t.Fatalf("workers --json: exit %d: %s", code, errOut)
		}
		st = sweepqueue.Status{}
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatal(err)
		}
		if st.Pending() == 0 && len(st.States) > 0 {
			break
		}
		if time.Now().After(deadline) {
			text, _, _ := run("workers", "--queue", dsn)
			t.Fatalf("the jobs did not settle: %v\n%s\n%s", st.States, text, w.out.String())
		}
	}
	w.cmd.Process.Signal(syscall.SIGTERM)
	<-w.done
	if w.code != 0 || !strings.Contains(w.out.String(), "→ complete: finished completed") || !strings.Contains(w.out.String(), "→ cancel:") {
		t.Fatalf("worker: exit %d\n%s", w.code, w.out.String())
	}
	if st.States["completed"] != 2 || st.States["cancelled"] != 2 {
		t.Fatalf("states %v: want one's 2 jobs completed, two's 2 cancelled", st.States)
	}
	for _, c := range st.Cancelled {
		if c.Attempt != 1 {
			t.Fatalf("cancelled job %+v: a changed agent cancels at the first attempt", c)
		}
	}
	text, _, code := run("workers", "--queue", dsn)
	if code != 0 || !strings.Contains(text, "cancelled (for a person): 2") || !strings.Contains(text, "changed since it ran") {
		t.Fatalf("workers: exit %d\n%s", code, text)
	}
	stats, errOut, code := run("stats", "--sweep", "two", "--store", dsn)
	if code != 0 || !strings.Contains(stats, "queue: 2 jobs cancelled for a person") || !strings.Contains(stats, "the agent five of sweep two changed since it ran") {
		t.Fatalf("stats --sweep two: exit %d\n%s%s", code, stats, errOut)
	}
	stats, _, _ = run("stats", "--sweep", "one", "--store", dsn)
	if strings.Contains(stats, "queue:") || !strings.Contains(stats, "completed 2") {
		t.Fatalf("stats --sweep one:\n%s", stats)
	}
	out, _, code = run("sweep", filepath.Join(dir, "one.yaml"), "--queue", dsn)
	if code != 0 || !strings.Contains(out, "sweep one: nothing to enqueue: every run is finished and scored") {
		t.Fatalf("enqueue of a finished sweep: exit %d\n%s", code, out)
	}
}
