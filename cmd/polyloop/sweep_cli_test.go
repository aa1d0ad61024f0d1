package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/polyloop/polyloop/sweep"
)

// The agents of the CLI's sweep tests: "slow" runs a shell command that
// takes a fifth of a second, then answers 4; "quick" answers 5 at once.
const (
	slowAgent = `name: slow
model:
  provider: script
  script:
    - {tool: bash, args: {command: "touch started; sleep 0.2; echo 4"}}
    - {text: "4"}
tools:
  shell: {dir: work, replay: replay_safe}
limits: {max_steps: 4}
`
	quickAgent = `name: quick
model:
  provider: script
  cost_per_token: 0.000001
  script:
    - {text: "5"}
limits: {max_steps: 4}
`
	sweepFile = `name: cli
agents: [slow.yaml, quick.yaml]
tasks: tasks.csv
epochs: 2
concurrency: 2
scorers:
  - kind: exact
  - {name: near, kind: numeric, tolerance: 1}
`
)

func newSweepCLI(t *testing.T) *cli {
	c := newCLI(t, "")
	c.write("slow.yaml", slowAgent)
	c.write("quick.yaml", quickAgent)
	c.write("sweep.yaml", sweepFile)
	var tasks strings.Builder
	tasks.WriteString("id,input,target,level\n")
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(&tasks, "q%d,what is %d+%d?,4,easy\n", i, i, 4-i)
	}
	c.write("tasks.csv", tasks.String())
	return c
}

// sweepStats runs polyloop stats --sweep cli --json.
func (c *cli) sweepStats(args ...string) *sweep.Stats {
	c.t.Helper()
	code, stdout, stderr := c.run(append([]string{"stats", "--sweep", "cli", "--json"}, args...)...)
	var st sweep.Stats
	if code != exitOK || json.Unmarshal([]byte(stdout), &st) != nil {
		c.t.Fatalf("stats --sweep: exit %d\n%s\n%s", code, stdout, stderr)
	}
	return &st
}

// TestSweepStopKillAndGoOn: a SIGINT stops a sweep at its runs' step
// boundaries (exit 130, saying how to go on, nothing of unknown outcome);
// a SIGKILL later leaves it resumable; the same command then settles every
// outcome, and again does nothing.
func TestSweepStopKillAndGoOn(t *testing.T) {
	t.Parallel()
	c := newSweepCLI(t)
	cmd, sc, seen := c.background("sweep", "sweep.yaml")
	awaitLine(sc, seen, "sweep: 20 outcomes to settle")
	c.waitFile("started") // runs are under way
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	drain(sc, seen)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
		t.Fatalf("exit %d after SIGINT:\n%s", code, seen)
	}
	wantAll(t, seen.String(), "SIGINT: stopping at the next step boundary",
		"interrupted: stopped at a step boundary: every run's action in progress finished and is recorded",
		"the rest are resumable. To go on:\n  polyloop sweep sweep.yaml")
	st := c.sweepStats("--by", "agent")
	if g := st.Groups; len(g) == 0 || g[0].Runs.UnknownActions != 0 || g[0].Runs.UnknownModelCalls != 0 {
		t.Fatalf("after a graceful stop: %+v", g)
	}

	cmd, sc, seen = c.background("sweep", "sweep.yaml", "--concurrency", "1")
	awaitLine(sc, seen, "outcomes to settle")
	os.Remove(c.dir + "/work/started")
	c.waitFile("started")
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	code, stdout, stderr := c.run("sweep", "sweep.yaml")
	if code != exitOK {
		t.Fatalf("going on: exit %d\n%s\n%s", code, stdout, stderr)
	}
	wantAll(t, stdout, "AGENT  OUTCOMES  SETTLED  STOP REASONS  ACCURACY (EXACT)", "PASS@1  PASS@2  PASS^2")
	wantAll(t, stderr, "20/20 done")
	st = c.sweepStats("--by", "agent")
	slow, quick := st.Groups[0], st.Groups[1]
	if slow.Group != "slow" || slow.Settled != 10 || slow.Accuracy.Mean != 1 || quick.Accuracy.Mean != 0 || quick.Runs.Runs != 10 {
		t.Errorf("statistics %+v / %+v", slow, quick)
	}
	near := c.sweepStats("--scorer", "near")
	if a := near.Groups[0].Accuracy; a.Mean != 1 || a.N != 20 {
		t.Errorf("numeric within 1: %+v", a)
	}
	code, _, stderr = c.run("sweep", "sweep.yaml")
	if code != exitOK || !strings.Contains(stderr, "20/20 done (20 before this run)") {
		t.Errorf("again: exit %d\n%s", code, stderr)
	}
}

// stats --sweep in text, JSON and CSV: the same numbers.
func TestSweepStatsFormats(t *testing.T) {
	t.Parallel()
	c := newSweepCLI(t)
	if code, stdout, stderr := c.run("sweep", "sweep.yaml", "--json"); code != exitOK {
		t.Fatalf("sweep --json: exit %d\n%s\n%s", code, stdout, stderr)
	} else {
		checkJSONEvents(t, stdout)
	}
	st := c.sweepStats("--by", "task")
	code, out, stderr := c.run("stats", "--sweep", "cli", "--by", "task", "--csv")
	if code != exitOK {
		t.Fatalf("--csv: exit %d\n%s", code, stderr)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 1+len(st.Groups) {
		t.Fatalf("CSV %v:\n%s", err, out)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for i, g := range st.Groups {
		row := rows[i+1]
		for name, want := range map[string]string{
			"group": g.Group, "outcomes": strconv.Itoa(g.Outcomes), "settled": strconv.Itoa(g.Settled),
			"outcomes_completed": strconv.Itoa(g.OutcomeStopReasons["completed"]), "scored": strconv.Itoa(g.Scored),
			"accuracy": num(g.Accuracy.Mean), "accuracy_n": strconv.Itoa(g.Accuracy.N), "pass_at_2": num(g.PassAtK[1].Mean),
			"pass_hat_2": num(g.PassHatK[1].Mean), "pass_hat_1_pairs": strconv.Itoa(g.PassHatK[0].Pairs),
			"runs": strconv.Itoa(g.Runs.Runs), "tokens_sum": strconv.FormatInt(g.TokensSum, 10), "cost_usd_sum": num(g.CostSum),
			"cost_unknown_runs": strconv.Itoa(g.CostUnknownRuns), "steps_max": num(*g.Runs.Steps.Max), "attempts": "completed 1:4",
		} {
			if row[col[name]] != want {
				t.Errorf("group %s: CSV %s = %q, JSON %q", g.Group, name, row[col[name]], want)
			}
		}
	}
	code, out, _ = c.run("stats", "--sweep", "cli", "--by", "epoch")
	if code != exitOK {
		t.Fatal(out)
	}
	wantAll(t, out, "epoch 1: 10 outcomes, 10 settled, 0 unsettled",
		"accuracy (exact): 0.500 ± 0.000 (SE clustered by task), 95% interval [0.500, 0.500] over 10 scored outcomes, 5 tasks; 0 unscored")
	// --by hash: one group per agent configuration, named by its hash,
	// whatever the tasks.
	byHash := c.sweepStats("--by", "hash")
	if len(byHash.Groups) != 2 || !strings.HasPrefix(byHash.Groups[0].Group, "sha256:") || byHash.Groups[0].Outcomes != 10 {
		t.Errorf("--by hash: %+v", byHash.Groups)
	}
	for _, bad := range [][]string{{"--by", "snapshot"}, {"--agent", "slow"}, {"--scorer", "nope"}} {
		if code, _, _ := c.run(append([]string{"stats", "--sweep", "cli"}, bad...)...); code != exitError {
			t.Errorf("stats --sweep cli %v: exit %d, want %d", bad, code, exitError)
		}
	}
	if code, _, stderr := c.run("stats", "--sweep", "nope"); code != exitError || !strings.Contains(stderr, `no sweep "nope"`) {
		t.Errorf("an unknown sweep: exit %d\n%s", code, stderr)
	}
}

// checkJSONEvents: --json prints one JSON object a line, the events then
// the summary.
func checkJSONEvents(t *testing.T, stdout string) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(stdout))
	kinds := map[string]int{}
	var last map[string]any
	for sc.Scan() {
		last = nil
		if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
			t.Fatalf("a line that is not JSON: %q", sc.Text())
		}
		kinds[last["event"].(string)]++
	}
	if kinds["run_started"] != 20 || kinds["run_finished"] != 20 || kinds["run_scored"] != 20 || kinds["sweep_finished"] != 1 || last["event"] != "summary" {
		t.Errorf("events %v, last %v", kinds, last["event"])
	}
}

// score rescores finished runs without running them.
func TestScoreCommand(t *testing.T) {
	t.Parallel()
	c := newSweepCLI(t)
	if code, _, stderr := c.run("sweep", "sweep.yaml", "-q"); code != exitOK {
		t.Fatal(stderr)
	}
	_, before, _ := c.run("ls", "--json")
	code, stdout, stderr := c.run("score", "cli")
	if code != exitOK || !strings.Contains(stdout, "sweep cli: 20 runs scored (exact, near)") {
		t.Fatalf("score cli: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, _ = c.run("ls", "--agent", "quick", "--limit", "1", "--json")
	var runs []struct {
		RunID string `json:"run_id"`
	}
	if code != exitOK || json.Unmarshal([]byte(stdout), &runs) != nil || len(runs) != 1 {
		t.Fatalf("ls: %s", stdout)
	}
	code, stdout, stderr = c.run("score", runs[0].RunID, "--missing")
	if code != exitOK || !strings.Contains(stdout, "sweep cli: 0 runs scored") {
		t.Errorf("score RUN --missing: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// A changed scorer (a stricter tolerance: another version) scores
	// again what --missing finds stale.
	c.write("sweep2.yaml", strings.Replace(sweepFile, "tolerance: 1", "tolerance: 0.5", 1))
	code, stdout, _ = c.run("score", "sweep2.yaml", "--missing")
	if code != exitOK || !strings.Contains(stdout, "sweep cli: 20 runs scored") {
		t.Errorf("score with a changed scorer: exit %d\n%s", code, stdout)
	}
	if a := c.sweepStats("--scorer", "near", "--by", "agent").Groups[1].Accuracy; a.Mean != 0 {
		t.Errorf("quick answers 5 for 4, not within 0.5: %+v", a)
	}
	if _, after, _ := c.run("ls", "--json"); after != before {
		t.Error("score ran something: the runs changed")
	}
	if code, _, stderr := c.run("score", "nothing-of-the-kind"); code != exitError || !strings.Contains(stderr, "is neither a sweep file") {
		t.Errorf("score of an unknown name: exit %d\n%s", code, stderr)
	}
}

// score counts a run scored only when every scorer scored it: with one
// of two scorers failing on the ten runs of one agent, it says 10 of 20,
// names the scorer and its failures, and exits 1.
func TestScoreCountsFailures(t *testing.T) {
	t.Parallel()
	c := newSweepCLI(t)
	c.write("sweep.yaml", strings.Replace(sweepFile, "  - {name: near, kind: numeric, tolerance: 1}\n",
		`  - {name: four, kind: command, command: [sh, -c, 'grep -q ''"answer":"4"'' || exit 7']}`+"\n", 1))
	if code, stdout, stderr := c.run("sweep", "sweep.yaml", "-q"); code != exitStopped || !strings.Contains(stderr, "10 runs a scorer could not score") {
		t.Fatalf("sweep: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr := c.run("score", "cli")
	if code != exitStopped || !strings.Contains(stdout, "sweep cli: 10 of 20 runs scored by every scorer (exact, four); 10 runs partly unscored: four could not score 10") {
		t.Fatalf("score cli: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if n := strings.Count(stderr, "exited with status 7"); n != 10 {
		t.Fatalf("%d failures listed, want 10:\n%s", n, stderr)
	}
}

// A bad sweep file is refused with every problem at its file:line:col.
func TestSweepBadFiles(t *testing.T) {
	t.Parallel()
	c := newSweepCLI(t)
	c.write("bad.yaml", "name: cli\nagents: [slow.yaml]\ntasks: tasks.csv\nepochs: two\nscorers:\n  - kind: exactly\n")
	code, _, stderr := c.run("sweep", "bad.yaml")
	if code != exitError {
		t.Fatalf("exit %d", code)
	}
	wantAll(t, stderr, "bad.yaml:4:9: epochs: expected a value of type integer, found string", `bad.yaml:6:11: scorers[0].kind: kind "exactly"`)
	c.write("badtasks.csv", "id,input\nq1,x\nq1,y\n")
	c.write("bt.yaml", strings.Replace(sweepFile, "tasks.csv", "badtasks.csv", 1))
	code, _, stderr = c.run("sweep", "bt.yaml")
	if code != exitError || !strings.Contains(stderr, `badtasks.csv:3: duplicate task id "q1" (first at line 2)`) {
		t.Errorf("duplicate tasks: exit %d\n%s", code, stderr)
	}
}

// The example sweep runs offline and gives the numbers its comments
// promise.
func TestSweepExample(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	for _, name := range []string{"sweep.yaml", "fours.yaml", "shell.yaml", "tasks.jsonl"} {
		b, err := os.ReadFile("../../examples/sweep/" + name)
		if err != nil {
			t.Fatal(err)
		}
		c.write(name, string(b))
	}
	code, stdout, stderr := c.run("sweep", "sweep.yaml")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	wantAll(t, stdout, "fours  6         6        completed 6   0.667 ± 0.333 (n=6)", "shell  6         6        completed 6   0.333 ± 0.333 (n=6)")
	code, stdout, _ = c.run("stats", "--sweep", "example", "--by", "agent", "--scorer", "exact")
	if code != exitOK {
		t.Fatalf("stats: exit %d", code)
	}
	wantAll(t, stdout, "agent fours: 6 outcomes, 6 settled, 0 unsettled", "accuracy (exact): 0.667 ± 0.333")
}

// stats --sweep --compare A B: slow answers every task right (exact 1),
// quick every one wrong (0): 10 pairs over 5 tasks, a difference of 1
// with no spread, slow winning every task.
func TestSweepCompare(t *testing.T) {
	t.Parallel()
	c := newSweepCLI(t)
	if code, _, stderr := c.run("sweep", "sweep.yaml", "-q"); code != exitOK {
		t.Fatal(stderr)
	}
	code, stdout, stderr := c.run("stats", "--sweep", "cli", "--compare", "slow", "quick", "--json")
	var cmp sweep.Comparison
	if code != exitOK || json.Unmarshal([]byte(stdout), &cmp) != nil {
		t.Fatalf("--compare --json: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if cmp.Pairs != 10 || len(cmp.Tasks) != 5 || cmp.Difference.Mean != 1 || *cmp.Difference.SE != 0 || cmp.WinsA != 5 || cmp.WinsB != 0 {
		t.Errorf("comparison %+v (difference %+v)", cmp, cmp.Difference)
	}
	code, stdout, _ = c.run("stats", "--sweep", "cli", "--compare", "quick,slow", "--scorer", "near")
	wantAll(t, stdout, "quick − slow on near (sweep cli): 10 pairs (the same task and epoch, both scored) over 5 tasks; unpaired: 0 of quick, 0 of slow",
		"mean difference: +0.000 ± 0.000 (SE clustered by task)", "tasks: quick wins 0, slow wins 0, 5 ties", "q1    2      1.000  1.000  +0.000")
	for _, bad := range [][]string{{"--sweep", "cli", "--compare", "slow"}, {"--compare", "slow", "quick"}, {"--sweep", "cli", "--compare", "slow", "nope"},
		{"--sweep", "cli", "--compare", "slow", "quick", "--by", "task"}, {"--sweep", "cli", "extra"}} {
		if code, _, _ := c.run(append([]string{"stats"}, bad...)...); code != exitError {
			t.Errorf("stats %v: exit %d, want %d", bad, code, exitError)
		}
	}
}

// The dataset controls: --tasks, --epochs, --shuffle --seed, --limit
// select what runs without changing run ids: the same command again finds
// its runs, a wider selection runs only what it adds. --limit and --epochs
// given take a positive number: 0 does not quietly mean all.
func TestSweepDatasetControls(t *testing.T) {
	t.Parallel()
	c := newSweepCLI(t)
	runs := func() int {
		t.Helper()
		_, stdout, _ := c.run("samples", "--sweep", "cli", "--json")
		var s sweep.Samples
		if err := json.Unmarshal([]byte(stdout), &s); err != nil {
			t.Fatalf("samples: %v\n%s", err, stdout)
		}
		return len(s.Rows)
	}
	if code, _, stderr := c.run("sweep", "sweep.yaml", "-q", "--tasks", "q2,q4", "--epochs", "1"); code != exitOK {
		t.Fatalf("--tasks q2,q4 --epochs 1: exit %d\n%s", code, stderr)
	}
	if n := runs(); n != 4 {
		t.Fatalf("%d runs, want 2 agents × 2 tasks × 1 epoch", n)
	}
	code, stdout, _ := c.run("sweep", "sweep.yaml", "--json", "--tasks", "q4,q2", "--epochs", "1")
	if code != exitOK || strings.Contains(stdout, `"event":"run_started"`) {
		t.Fatalf("the same selection again started runs: exit %d\n%s", code, stdout)
	}
	// Shuffled, the first 3 of 5 by seed 5: q2 and q4 are found again if
	// chosen, the others run.
	if code, _, stderr := c.run("sweep", "sweep.yaml", "-q", "--shuffle", "--seed", "5", "--limit", "3", "--epochs", "1"); code != exitOK {
		t.Fatalf("--shuffle: exit %d\n%s", code, stderr)
	}
	chosen := sweep.Select(sweep.TaskList{{ID: "q1", Input: "x"}, {ID: "q2", Input: "x"}, {ID: "q3", Input: "x"}, {ID: "q4", Input: "x"}, {ID: "q5", Input: "x"}},
		sweep.Selection{Shuffle: true, Seed: 5, Limit: 3})
	union := map[string]bool{"q2": true, "q4": true}
	if _, err := chosen.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	chosen.Tasks(context.Background(), func(t sweep.Task) error { union[t.ID] = true; return nil })
	if n := runs(); n != 2*len(union) {
		t.Fatalf("%d runs, want 2 agents × %d tasks (%v)", n, len(union), union)
	}
	for _, bad := range [][]string{{"--seed", "3"}, {"--tasks", "q1,nope"}, {"--limit", "-1"}, {"--epochs", "-2"}, {"--limit", "0"}, {"--epochs", "0"}} {
		code, stdout, stderr := c.run(append([]string{"sweep", "sweep.yaml", "--json"}, bad...)...)
		if code != exitError || strings.Contains(stdout, `"event":"run_started"`) {
			t.Errorf("sweep %v: exit %d, want %d, nothing run\n%s", bad, code, exitError, stderr)
		}
		if (bad[0] == "--limit" || bad[0] == "--epochs") && !strings.Contains(stderr, bad[0]+" "+bad[1]+":") {
			t.Errorf("sweep %v: the error does not name the flag:\n%s", bad, stderr)
		}
		if bad[0] == "--tasks" && !strings.Contains(stderr, `the task file does not hold`) || bad[0] == "--tasks" && !strings.Contains(stderr, `"nope"`) {
			t.Errorf("--tasks nope: %s", stderr)
		}
	}
}

// A scorer's failure is stored in the sweep's ledger, bounded, with the
// end of the command's standard error (where a traceback says what
// failed): samples and show say why a run is unscored.
func TestScorerFailureExplained(t *testing.T) {
	t.Parallel()
	c := newSweepCLI(t)
	c.write("sweep.yaml", strings.Replace(sweepFile, "  - {name: near, kind: numeric, tolerance: 1}\n",
		`  - {name: tests, kind: command, command: [sh, -c, 'head -c 20000 /dev/zero | tr "\0" x >&2; echo >&2; echo "AssertionError: 5 != 4" >&2; exit 7']}`+"\n", 1))
	if code, stdout, stderr := c.run("sweep", "sweep.yaml", "-q", "--limit", "1", "--epochs", "1"); code != exitStopped {
		t.Fatalf("sweep: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr := c.run("samples", "--sweep", "cli", "--json")
	var s sweep.Samples
	if code != exitOK || json.Unmarshal([]byte(stdout), &s) != nil || len(s.Rows) != 2 {
		t.Fatalf("samples: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, r := range s.Rows {
		e := r.ScoreErrors["tests"]
		if !strings.Contains(e, "exited with status 7") || !strings.HasSuffix(e, "AssertionError: 5 != 4") || len(e) > sweep.MaxScoreError {
			t.Errorf("%s: score error (%d bytes) %.200q…", r.RunID, len(e), e)
		}
	}
	code, stdout, _ = c.run("samples", "--sweep", "cli", "--csv")
	recs, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if code != exitOK || err != nil || len(recs) != 3 {
		t.Fatalf("samples --csv: exit %d, %v", code, err)
	}
	col := slices.Index(recs[0], "error_tests")
	for i, rec := range recs[1:] {
		if col < 0 || rec[col] != s.Rows[i].ScoreErrors["tests"] {
			t.Errorf("samples --csv: no error_tests column, or not the JSON's: %v", recs[0])
		}
	}
	pq := filepath.Join(c.dir, "s.parquet")
	if code, _, stderr := c.run("samples", "--sweep", "cli", "--parquet", pq); code != exitOK {
		t.Fatalf("samples --parquet: %s", stderr)
	}
	rows, err := parquet.ReadFile[any](pq)
	if err != nil || len(rows) != 2 || rows[0].(map[string]any)["error_tests"] != s.Rows[0].ScoreErrors["tests"] {
		t.Errorf("samples --parquet: %v, error_tests of row 1 not the JSON's", err)
	}
	code, stdout, stderr = c.run("samples", "--sweep", "cli", "--scorer", "tests")
	if code != exitOK || strings.Count(stdout, "failed: scorer tests: the command exited with status 7") != 2 {
		t.Errorf("samples text: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = c.run("show", s.Rows[0].RunID)
	if code != exitOK || !strings.Contains(stdout, "tests failed at") || !strings.Contains(stdout, "AssertionError: 5 != 4") {
		t.Errorf("show: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
