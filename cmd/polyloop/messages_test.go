package main

import (
	"strings"
	"testing"
)

// gatedAgent's step 1 runs a bash command that waits for approval.
const gatedAgent = `name: gated
model:
  provider: script
  script:
    - {tool: bash, args: {command: "echo sent"}}
    - {text: "done"}
limits: {max_steps: 3}
tools:
  shell: {dir: work, approval: required}
`

// TestGateMessages: a suspended run's hints name the action and the agent
// file; approve --allow with nothing waiting says so once (not a listing
// and a contradicting error); resume -q prints no plan.
func TestGateMessages(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	c.write("gated.yaml", gatedAgent)
	code, stdout, stderr := c.run("run", "gated.yaml", "task", "--id", "g1")
	if code != exitSuspended || !strings.Contains(stdout, "answer with: polyloop approve g1 a1 --allow|--deny") ||
		!strings.Contains(stdout, "then: polyloop resume g1 --agent gated.yaml") || strings.Contains(stdout, "ACTION") {
		t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = c.run("approve", "g1", "--allow")
	if code != exitOK || !strings.Contains(stdout, `allowed a1; continue with the file of agent "gated": polyloop resume g1 --agent FILE`) {
		t.Fatalf("approve: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = c.run("approve", "g1", "--allow")
	if code != exitError || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "run g1 waits for no approval: nothing to allow") {
		t.Fatalf("approve with nothing waiting: exit %d, want one message:\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = c.run("resume", "g1", "--agent", "gated.yaml", "-q")
	if code != exitOK || strings.Contains(stderr, "resume plan") || !strings.Contains(stdout, "completed") {
		t.Fatalf("resume -q: exit %d\n%s%s", code, stdout, stderr)
	}
}

// echoAgent runs one bash command and answers.
const echoAgent = `name: echo
model:
  provider: script
  script:
    - {tool: bash, args: {command: "echo hi"}}
    - {text: done}
limits: {max_steps: 3}
tools:
  shell: {dir: work}
`

// TestReplaySaysTheClientWasReplaced: replay says once that the model
// client was replaced (not each of its configuration fields) and names
// the agent's real changes, as show of the replay does.
func TestReplaySaysTheClientWasReplaced(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	c.write("echo.yaml", echoAgent)
	c.write("brief.yaml", strings.Replace(echoAgent, "name: echo\n", "name: echo\nsystem: be brief\n", 1))
	if code, stdout, stderr := c.run("run", "echo.yaml", "task", "--id", "e1", "-q"); code != exitOK {
		t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
	}
	for agent, want := range map[string]string{
		"echo.yaml":  "configuration differs in: the model client (scriptmodel, replaced by replaymodel)\n",
		"brief.yaml": "configuration differs in: the model client (scriptmodel, replaced by replaymodel), system\n",
	} {
		id := "r-" + strings.TrimSuffix(agent, ".yaml")
		code, stdout, stderr := c.run("replay", "e1", "--agent", agent, "--id", id)
		if code != exitOK || !strings.Contains(stdout, want) || strings.Contains(stdout, "model_client.") {
			t.Errorf("replay under %s: exit %d, want %q\n%s%s", agent, code, want, stdout, stderr)
		}
	}
	for id, want := range map[string]string{
		"r-echo":  "replay of run e1: the model answered from its log; configuration differs in: the model client (scriptmodel, replaced by replaymodel)\n",
		"r-brief": "replay of run e1: the model answered from its log; configuration differs in: the model client (scriptmodel, replaced by replaymodel), system\n",
	} {
		if _, stdout, _ := c.run("show", id); !strings.Contains(stdout, want) || strings.Contains(stdout, "the agent unchanged") {
			t.Errorf("show of replay %s, want %q, as replay said:\n%s", id, want, stdout)
		}
	}
}

// TestReplayExitCodes: replay exits as run, resume and fork do: 0 for a
// replay that completed, 1 for one that stopped for another reason,
// whatever --match.
func TestReplayExitCodes(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	c.write("echo.yaml", echoAgent)
	c.write("short.yaml", strings.Replace(echoAgent, "max_steps: 3", "max_steps: 1", 1))
	if code, stdout, stderr := c.run("run", "short.yaml", "task", "--id", "s1", "-q"); code != exitStopped {
		t.Fatalf("run stopped at max_steps: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := c.run("run", "echo.yaml", "task", "--id", "e1", "-q"); code != exitOK {
		t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, tc := range []struct {
		src, agent, match string
		want              int
	}{
		{"s1", "short.yaml", "exact", exitStopped},
		{"s1", "short.yaml", "structure", exitStopped},
		{"s1", "short.yaml", "steps", exitStopped},
		{"e1", "echo.yaml", "exact", exitOK},
	} {
		code, stdout, stderr := c.run("replay", tc.src, "--agent", tc.agent, "--match", tc.match)
		if code != tc.want {
			t.Errorf("replay %s --agent %s --match %s: exit %d, want %d\n%s%s", tc.src, tc.agent, tc.match, code, tc.want, stdout, stderr)
		}
		code, stdout, stderr = c.run("replay", tc.src, "--agent", tc.agent, "--match", tc.match, "--json")
		if code != tc.want {
			t.Errorf("replay %s --match %s --json: exit %d, want %d\n%s%s", tc.src, tc.match, code, tc.want, stdout, stderr)
		}
	}
}

// TestNoInternalNames: messages name what a user of the command line
// knows — the agent, the commands — not the library's internal components
// (agentfile.router) or Go API (Runner.Approve).
func TestNoInternalNames(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	c.write("gated.yaml", gatedAgent)
	c.run("run", "gated.yaml", "task", "--id", "g1", "-q")
	_, _, stderr := c.run("resume", "g1")
	if !strings.Contains(stderr, `resuming it needs the file of its agent "gated"`) || strings.Contains(stderr, "agentfile.") {
		t.Errorf("resume without --agent:\n%s", stderr)
	}
	c.run("approve", "g1", "--allow")
	_, stdout, _ := c.run("show", "g1", "--json")
	if !strings.Contains(stdout, "approve: a1 allowed by") || strings.Contains(stdout, "Runner.") {
		t.Errorf("show --json's invocations:\n%s", stdout)
	}
}

// TestOnePrefixAndFlagsNamed: "polyloop: " starts a command's error line
// and never appears inside one (a run's failure, a scorer's, listed by
// sweep and score); a question a sweep cannot answer names the flag (or
// the viewer's URL parameter) that asked it.
func TestOnePrefixAndFlagsNamed(t *testing.T) {
	t.Parallel()
	c := newSweepCLI(t)
	c.write("fail.yaml", "name: fail\nmodel: {provider: script, script: [{fail: \"503 service unavailable\"}]}\n")
	c.write("m.yaml", "name: m\nagents: [fail.yaml, quick.yaml]\ntasks: tasks.csv\nretry: {attempts: 1}\n"+
		"scorers:\n  - {name: t, kind: command, command: [sh, -c, 'echo boom >&2; exit 7']}\n")
	noInnerPrefix := func(what, out string) {
		t.Helper()
		for _, l := range strings.Split(out, "\n") {
			if i := strings.Index(l, "polyloop: "); i > 0 && !strings.Contains(l[:i], "polyloop sweep") {
				t.Errorf("%s: \"polyloop: \" inside a line: %q", what, l)
			}
		}
	}
	_, _, stderr := c.run("sweep", "m.yaml")
	noInnerPrefix("sweep", stderr)
	if !strings.Contains(stderr, "incomplete: 5 runs a scorer could not score") {
		t.Errorf("sweep:\n%s", stderr)
	}
	_, _, stderr = c.run("sweep", "m.yaml", "--json")
	noInnerPrefix("sweep --json", stderr)
	_, stdout, stderr := c.run("score", "m")
	noInnerPrefix("score", stdout+stderr)
	if !strings.Contains(stderr, ": scorer t: the command exited with status 7") {
		t.Errorf("score:\n%s", stderr)
	}
	for _, q := range []struct {
		args []string
		want string
	}{
		{[]string{"samples", "--sweep", "m", "--sort", "bogus"}, `polyloop: --sort "bogus": expected one of run, score,`},
		{[]string{"samples", "--sweep", "m", "--scorer", "zz"}, `polyloop: --scorer "zz": the sweep has no such scorer (its scorers: t)`},
		{[]string{"stats", "--sweep", "m", "--scorer", "zz"}, `polyloop: --scorer "zz": sweep m has no such scorer (its scorers: t)`},
		{[]string{"stats", "--sweep", "m", "--by", "day"}, `polyloop: --by "day": expected agent, hash (agent configuration), task or epoch`},
		{[]string{"stats", "--sweep", "m", "--compare", "quick", "nobody"}, `polyloop: --compare "nobody": sweep m has no such agent (its agents: fail, quick)`},
		{[]string{"env", "prune", "--backend", "xx"}, `polyloop: --backend "xx": expected bwrap, docker or all`},
	} {
		code, _, stderr := c.run(q.args...)
		if code != exitError || !strings.HasPrefix(stderr, q.want) {
			t.Errorf("%v: exit %d\n%s\nwant it to start %s", q.args, code, stderr, q.want)
		}
	}
}
