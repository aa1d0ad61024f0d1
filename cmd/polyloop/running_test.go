package main

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// slowModelAgent's first model call takes a minute.
const slowModelAgent = `name: slow-model
model:
  provider: script
  script:
    - {text: "done", delay_ms: 60000}
`

// TestLiveRunShownRunning runs on SQLite and, when configured, on
// PostgreSQL: while a polyloop process drives a run — in its action, or
// in its model call —, show and ls say "running (pid N on HOST, since T)",
// what is open is under way, and there is no resume plan and nothing of
// "unknown outcome"; stats counts and lists it as running, with nothing of
// unknown outcome; they take no lease (the run goes on, and a resume is
// still refused). Once the holder is killed, the same log reads as a
// crashed run.
func TestLiveRunShownRunning(t *testing.T) {
	t.Parallel()
	for name, store := range testStores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newCLI(t, store)
			uniq := strconv.FormatInt(time.Now().UnixNano(), 36)
			id := "a-" + uniq
			c.write(id+".yaml", strings.Replace(strings.ReplaceAll(holdAgent, "ID", id), "name: holder", "name: "+id, 1))
			holder, _, _ := c.background("run", id+".yaml", "task", "--id", id)
			c.waitFile("started-" + id)
			c.checkRunning(id, holder.Process.Pid, "under way: no outcome recorded yet")
			if code, _, stderr := c.run("resume", id, "--agent", id+".yaml"); code != exitError || !strings.Contains(stderr, "held by another live process") {
				t.Fatalf("resume of a running run after show and ls: exit %d\n%s", code, stderr)
			}
			holder.Process.Signal(syscall.SIGKILL)
			holder.Wait()
			_, stdout, _ := c.run("show", id)
			if !strings.Contains(stdout, "UNFINISHED; resume would") || !strings.Contains(stdout, "outcome UNKNOWN") || strings.Contains(stdout, "running (") {
				t.Errorf("show after the holder was killed:\n%s", stdout)
			}

			id = "m-" + uniq
			c.write(id+".yaml", strings.Replace(slowModelAgent, "name: slow-model", "name: "+id, 1))
			holder, sc, seen := c.background("run", id+".yaml", "task", "--id", id)
			go drain(sc, seen)
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if _, stdout, _ := c.run("show", id); strings.Contains(stdout, "model call") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the run's model call never showed")
				}
			}
			c.checkRunning(id, holder.Process.Pid, "under way (no result yet)")
		})
	}
}

// checkRunning checks what show, ls and stats say of run id (its agent
// named id too), driven by process
// pid, whose open execution show says is under way as inFlight says.
func (c *cli) checkRunning(id string, pid int, inFlight string) {
	c.t.Helper()
	running := "running (pid " + strconv.Itoa(pid) + " on "
	_, stdout, stderr := c.run("show", id)
	if !strings.Contains(stdout, running) || !strings.Contains(stdout, inFlight) {
		c.t.Errorf("show of a running run lacks %q or %q:\n%s%s", running, inFlight, stdout, stderr)
	}
	for _, not := range []string{"resume would", "UNKNOWN", "unknown outcome", "UNFINISHED"} {
		if strings.Contains(stdout, not) {
			c.t.Errorf("show of a running run says %q:\n%s", not, stdout)
		}
	}
	_, stdout, _ = c.run("ls")
	if !strings.Contains(stdout, running) {
		c.t.Errorf("ls does not say the run is %s…:\n%s", running, stdout)
	}
	_, stdout, _ = c.run("stats", "--agent", id)
	if !strings.Contains(stdout, "(1 running)") || !strings.Contains(stdout, "running: "+id) ||
		!strings.Contains(stdout, "unknown outcome: 0 model calls, 0 actions") || strings.Contains(stdout, "unfinished: "+id) {
		c.t.Errorf("stats does not count run %s as running (nothing of unknown outcome):\n%s", id, stdout)
	}
	_, stdout, _ = c.run("ls", "--json")
	if !strings.Contains(stdout, `"running": {`) || !strings.Contains(stdout, `"pid": `+strconv.Itoa(pid)) {
		c.t.Errorf("ls --json does not name the live holder:\n%s", stdout)
	}
}
