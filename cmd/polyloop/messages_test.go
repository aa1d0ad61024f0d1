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
	_, stdout, _ := c.run("show", "r-brief")
	if !strings.Contains(stdout, "replay of run e1: the model answered from its log; the agent changed in system") {
		t.Errorf("show of a replay under a changed agent:\n%s", stdout)
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
