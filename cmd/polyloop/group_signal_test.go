//go:build unix

package main

import (
	"bufio"
	"bytes"
	"cmp"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// groupAgent is an agent whose step 1 runs TOOL with ARGS, served by TOOLS.
const groupAgent = `name: grouped
model:
  provider: script
  script:
    - {tool: TOOL, args: ARGS}
    - {text: "done"}
limits: {max_steps: 3}
tools:
TOOLS`

// TestTerminalCtrlCStopsGracefully: Ctrl-C at a terminal sends SIGINT to
// the whole foreground process group, not to polyloop alone. The tools'
// processes — a stdio MCP server, a shell command — are in groups of their
// own, so they do not get it: the action in flight finishes and is
// recorded, the run stops at the step boundary, and resume completes it.
func TestTerminalCtrlCStopsGracefully(t *testing.T) {
	t.Parallel()
	type tc struct {
		tool, args, tools string
		started           string // a file the action creates in work/, or "" to wait for its progress line
	}
	cases := map[string]tc{
		"mcp stdio server": {"slow", "{}", "  mcp:\n    - {name: slow, command: mcpslow, dir: work}\n", "started"},
		"shell":            {"bash", `{command: "touch started; sleep 3; echo slept"}`, "  shell: {dir: work}\n", "started"},
	}
	if tools := everythingTools(); tools != "" {
		cases["server-everything"] = tc{"trigger-long-running-operation", "{duration: 3, steps: 3}", tools, ""}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newCLI(t, "")
			agent := strings.NewReplacer("TOOLS", tc.tools, "TOOL", tc.tool, "ARGS", tc.args).Replace(groupAgent)
			c.write("agent.yaml", agent)
			code, stderr := c.ctrlC("g1", tc.tool, tc.started)
			if code != exitInterrupted {
				t.Fatalf("exit %d, want %d:\n%s", code, exitInterrupted, stderr)
			}
			wantAll(t, stderr, "SIGINT: stopping at the next step boundary", "→ executed",
				"stopped: run g1 stopped at a step boundary, as asked", "resume will start step 2")
			code, stdout, stderr := c.run("resume", "g1", "--agent", "agent.yaml")
			if code != exitOK || !strings.Contains(stdout, "run g1: completed after 2 steps") {
				t.Fatalf("resume: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
		})
	}
}

// everythingTools is the tools section of an agent served by the npm
// reference server mcp-server-everything over stdio, or "" when the npm
// peers are not installed (POLYLOOP_TEST_MCP_NPM; .ci/run installs them).
func everythingTools() string {
	dir := os.Getenv("POLYLOOP_TEST_MCP_NPM")
	if dir == "" {
		return ""
	}
	node := cmp.Or(os.Getenv("POLYLOOP_TEST_NODE"), "node")
	script := filepath.Join(dir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	return "  mcp:\n    - {name: everything, command: " + node + ", args: [" + script + ", stdio]}\n"
}

// ctrlC runs agent.yaml as run id in a process group of its own, as a shell
// runs a foreground job, waits until the action of tool has started (the
// file started in work/, or its progress line), sends SIGINT to the whole
// group as the terminal does on Ctrl-C, and returns the exit code and
// standard error.
func (c *cli) ctrlC(id, tool, started string) (int, string) {
	c.t.Helper()
	cmd := c.command("run", "agent.yaml", "task", "--id", id)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	sc, seen := bufio.NewScanner(stderr), &strings.Builder{}
	if started != "" {
		c.waitFile(started)
	} else {
		awaitLine(sc, seen, "action "+tool)
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		c.t.Fatal(err)
	}
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
	}
	cmd.Wait()
	return cmd.ProcessState.ExitCode(), seen.String()
}

// TestKilledRunLeavesNoServer: SIGKILL of `polyloop run` while an MCP
// tool call is in flight ends every process the run started — the stdio
// server, what the server started, the groups' watchdogs — even under an
// ignored SIGHUP (nohup) and with a server that does not read its stdin
// while it works (mcp-server-everything's long operation).
func TestKilledRunLeavesNoServer(t *testing.T) {
	t.Parallel()
	type tc struct{ tool, args, tools, started string }
	cases := map[string]tc{
		"a server with a child": {"slow", "{}", "  mcp:\n    - {name: slow, command: sh, args: [-c, 'sleep 600 & exec mcpslow'], dir: work}\n", "started"},
	}
	if tools := everythingTools(); tools != "" {
		cases["server-everything"] = tc{"trigger-long-running-operation", "{duration: 60, steps: 3}", tools, ""}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newCLI(t, "")
			c.write("agent.yaml", strings.NewReplacer("TOOLS", tc.tools, "TOOL", tc.tool, "ARGS", tc.args).Replace(groupAgent))
			cmd := c.command("run", "agent.yaml", "task", "--id", "k1")
			cmd.Path, cmd.Args = "/bin/sh", append([]string{"/bin/sh", "-c", `trap '' HUP; exec "$0" "$@"`}, cmd.Args...)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			sc, seen := bufio.NewScanner(stderr), &bytes.Buffer{}
			if tc.started != "" {
				c.waitFile(tc.started)
			} else {
				awaitLine(sc, seen, "action "+tc.tool)
				time.Sleep(500 * time.Millisecond) // the call reaches the server
			}
			started := descendants(cmd.Process.Pid)
			t.Cleanup(func() {
				for _, pid := range started {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			if len(started) == 0 {
				t.Fatalf("the run started no process: want its server at least\n%s", seen)
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			go drain(sc, seen)
			cmd.Wait()
			for _, pid := range started {
				waitGone(t, strconv.Itoa(pid), "a process the killed run started")
			}
		})
	}
}

// descendants lists the processes descended from pid, from /proc.
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		i := strings.LastIndexByte(string(stat), ')')
		if err != nil || i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:])) // state, ppid, ...
		if len(fields) > 1 {
			ppid, _ := strconv.Atoi(fields[1])
			children[ppid] = append(children[ppid], p)
		}
	}
	var all []int
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		all = append(all, queue[0])
		queue = append(queue, children[queue[0]]...)
	}
	return all
}
