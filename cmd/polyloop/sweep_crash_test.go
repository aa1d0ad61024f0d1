package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/shellexec"
	"github.com/polyloop/polyloop/sqlitestore"
	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/toolcallparser"
)

// The SIGKILL test of sweeps: a sweep of crashTasks tasks × crashEpochs
// epochs on SQLite, a scripted model that fails the calls crashFault names
// and a real shell executor, run in a child process that is killed with
// SIGKILL at random moments and started again with the same arguments,
// until it finishes. Then: every run finished exactly once, no run started
// twice, the retried attempts are linked, and polyloop stats --sweep equals
// the ground truth computed from the faults.

var sweepKills = flag.Int("sweep.kills", 5, "SIGKILLs of the sweep crash test's child")

const (
	crashTasks    = 200
	crashEpochs   = 3
	crashAttempts = 3
	crashChildEnv = "POLYLOOP_SWEEP_CRASH_CHILD"
	crashSweep    = "crash"
)

// crashFault is the injected fault of an attempt: the step whose model call
// fails (1 or 2), or 0 for none. A fourth of the attempts fail.
func crashFault(task string, epoch, attempt int) int {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%d/%d", task, epoch, attempt)
	switch p := h.Sum32() % 100; {
	case p < 15:
		return 1
	case p < 25:
		return 2
	}
	return 0
}

// crashWrong names the tasks the model answers wrong: every fourth.
func crashWrong(task int) bool { return task%4 == 0 }

func init() {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		if err := sweepCrashChild(dir); err != nil {
			fmt.Fprintln(os.Stderr, "sweep crash child:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
}

// crashModel answers task N with bash "echo $((N * 2))", then the number
// the shell printed (plus one for the wrong tasks); the calls crashFault
// names fail.
type crashModel struct{}

var firstNumber = regexp.MustCompile(`-?\d+`)

func (crashModel) Describe() polyloop.Component { return polyloop.Component{Name: "crashModel"} }

func (crashModel) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	ref, err := sweep.ParseRunID(req.RunID)
	if err != nil {
		return polyloop.ModelReply{}, err
	}
	t := time.NewTimer(2 * time.Millisecond)
	select {
	case <-ctx.Done():
		t.Stop()
		return polyloop.ModelReply{}, ctx.Err()
	case <-t.C:
	}
	if crashFault(ref.TaskKey, ref.Epoch, ref.Attempt) == req.Step {
		return polyloop.ModelReply{}, fmt.Errorf("injected failure of step %d", req.Step)
	}
	usage := polyloop.Usage{InputTokens: 10, OutputTokens: 5}
	last := req.Messages[len(req.Messages)-1].Content
	if req.Step == 1 {
		args, _ := json.Marshal(map[string]string{"command": "echo $((" + last + " * 2))"})
		return polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{{ID: "c1", Name: shellexec.ToolName, Args: args}}, Usage: usage, Attempts: 1}, nil
	}
	answer := firstNumber.FindString(last)
	n, _ := strconv.Atoi(strings.TrimPrefix(ref.TaskKey, "t"))
	if crashWrong(n) {
		answer += "1"
	}
	return polyloop.ModelReply{Text: answer, Usage: usage, Attempts: 1}, nil
}

// sweepCrashChild runs the sweep of dir to its end (or until killed).
func sweepCrashChild(dir string) error {
	ctx := context.Background()
	store, err := sqlitestore.Open(filepath.Join(dir, "runs.db"), nil)
	if err != nil {
		return err
	}
	defer store.Close()
	shell, err := shellexec.New(shellexec.Options{Dir: filepath.Join(dir, "work"), ToolReplay: polyloop.ReplaySafe, Shell: "sh"})
	if err != nil {
		return err
	}
	agent := &sweep.Agent{
		Agent:    polyloop.Agent{Name: "doubler", Limits: polyloop.Limits{MaxSteps: 4}, Model: polyloop.ModelParams{Provider: "script", Model: "crash"}},
		Model:    crashModel{},
		Parser:   toolcallparser.New(toolcallparser.Options{Tools: shell.ToolSpecs()}),
		Executor: shell,
	}
	s, err := sweep.New(sweep.Definition{Name: crashSweep, Agents: []*sweep.Agent{agent}, Tasks: sweep.TaskFile{Path: filepath.Join(dir, "tasks.jsonl")},
		Epochs: crashEpochs, Retry: sweep.RetryPolicy{Attempts: crashAttempts, Backoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond},
		Scorers: []sweep.Scorer{sweep.Exact("exact", sweep.MatchOptions{})}, Concurrency: 8})
	if err != nil {
		return err
	}
	_, err = s.Run(ctx, sweep.RunOptions{Store: store, Events: func(ev sweep.Event) {
		if ev.Kind == sweep.EventSweepStarted {
			fmt.Println("sweep started")
		}
	}})
	return err
}

// killsPerSweep is how many times one sweep is killed before it is let
// finish: about what it takes for the kills to land while it runs. More
// kills (-sweep.kills) run more sweeps.
const killsPerSweep = 5

func TestSweepSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d, %d kills", seed, *sweepKills)
	landed := 0
	for left := *sweepKills; ; left -= killsPerSweep {
		landed += crashSweepOnce(t, rng, min(left, killsPerSweep))
		if left <= killsPerSweep {
			break
		}
	}
	t.Logf("%d of %d kills landed while a sweep ran", landed, *sweepKills)
	if *sweepKills > 0 && landed == 0 {
		t.Errorf("no kill landed while the sweep ran: the test did not test resumption")
	}
}

// crashSweepOnce runs one sweep in a fresh directory, kills it kills
// times, lets it finish, and checks it; it returns how many kills came
// while the sweep ran.
func crashSweepOnce(t *testing.T, rng *rand.Rand, kills int) int {
	dir := t.TempDir()
	var tasks bytes.Buffer
	for i := 1; i <= crashTasks; i++ {
		fmt.Fprintf(&tasks, `{"id": "t%d", "input": "%d", "target": "%d"}`+"\n", i, i, 2*i)
	}
	if err := os.WriteFile(filepath.Join(dir, "tasks.jsonl"), tasks.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	landed := 0
	for range kills {
		if crashChild(t, dir, time.Duration(20+rng.IntN(400))*time.Millisecond) {
			landed++
		}
	}
	if crashChild(t, dir, 0) {
		t.Fatal("the last invocation was killed")
	}
	unknown := checkCrashStore(t, dir)
	checkCrashStats(t, dir, unknown)
	return landed
}

// crashChild runs the child; with a positive after, it kills it with
// SIGKILL that long after it started its sweep, and reports whether the
// kill came before the child ended by itself.
func crashChild(t *testing.T, dir string, after time.Duration) bool {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "sweep started" {
				close(started)
			}
		}
	}()
	killed := false
	if after > 0 {
		select {
		case <-started:
			time.Sleep(after)
			killed = cmd.Process.Signal(syscall.SIGKILL) == nil
		case <-time.After(2 * time.Minute):
			t.Fatalf("the child did not start its sweep: %s", stderr.String())
		}
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		return killed
	}
	if err != nil {
		t.Fatalf("the child failed: %v\n%s", err, stderr.String())
	}
	return false
}

// truth is what the faults make of one coordinate.
type truth struct {
	attempts int
	outcome  polyloop.StopReason
}

func coordTruth(task string, epoch int) truth {
	for a := 1; a <= crashAttempts; a++ {
		if crashFault(task, epoch, a) == 0 {
			return truth{a, polyloop.StopCompleted}
		}
	}
	return truth{crashAttempts, polyloop.StopLLMError}
}

// checkCrashStore checks every run's log and ledger entry against the
// faults, and returns how many runs have a model call of unknown outcome
// (an intent without its result: the kill came during the call).
func checkCrashStore(t *testing.T, dir string) int {
	ctx := context.Background()
	store, err := sqlitestore.Open(filepath.Join(dir, "runs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	runs, err := store.ListRuns(ctx, polyloop.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for i := 1; i <= crashTasks; i++ {
		for e := 1; e <= crashEpochs; e++ {
			want += coordTruth("t"+strconv.Itoa(i), e).attempts
		}
	}
	if len(runs) != want {
		t.Errorf("%d runs in the store, the faults make %d", len(runs), want)
	}
	unknown := 0
	for _, r := range runs {
		ref, err := sweep.ParseRunID(r.RunID)
		if err != nil {
			t.Errorf("run %s: %v", r.RunID, err)
			continue
		}
		tr := coordTruth(ref.TaskKey, ref.Epoch)
		log, err := polyloop.ReadLog(ctx, store, r.RunID)
		if err != nil {
			t.Fatal(err)
		}
		starts, finishes := 0, 0
		for _, rec := range log.Records {
			switch rec.Body.(type) {
			case *polyloop.RunStarted:
				starts++
			case *polyloop.RunFinished:
				finishes++
			}
		}
		wantStop := polyloop.StopCompleted
		if crashFault(ref.TaskKey, ref.Epoch, ref.Attempt) != 0 {
			wantStop = polyloop.StopLLMError
		}
		fin := log.Finished()
		switch {
		case ref.Attempt > tr.attempts:
			t.Errorf("run %s: attempt %d of a coordinate that needs %d", r.RunID, ref.Attempt, tr.attempts)
		case starts != 1 || finishes != 1 || fin == nil:
			t.Errorf("run %s: %d run_started, %d run_finished (the last record: %T)", r.RunID, starts, finishes, log.Records[len(log.Records)-1].Body)
		case fin.StopReason != wantStop:
			t.Errorf("run %s finished %s, its fault says %s", r.RunID, fin.StopReason, wantStop)
		}
		if polyloop.ComputeTotals(log).UnknownModelCalls > 0 {
			unknown++
		}
	}
	t.Logf("%d runs, %d of them resumed past a model call of unknown outcome", len(runs), unknown)
	for i := 1; i <= crashTasks; i++ {
		for e := 1; e <= crashEpochs; e++ {
			checkCrashCoord(t, store, "t"+strconv.Itoa(i), e)
		}
	}
	return unknown
}

// checkCrashCoord checks a coordinate's ledger entries: attempts 1 … n,
// each linked to the one before, the outcome scored when it completed.
func checkCrashCoord(t *testing.T, store *sqlitestore.Store, task string, epoch int) {
	ctx := context.Background()
	tr := coordTruth(task, epoch)
	m, err := sweep.ReadManifest(ctx, store, crashSweep)
	if err != nil {
		t.Fatal(err)
	}
	states, err := store.Coords(ctx, crashSweep, []string{sweep.CoordID(crashSweep, m.Agents[0].Hash, task, epoch)})
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != tr.attempts {
		t.Errorf("%s e%d: %d attempts, want %d", task, epoch, len(states), tr.attempts)
		return
	}
	for i, st := range states {
		if st.Attempt != i+1 || (i == 0 && st.Previous != "") || (i > 0 && st.Previous != states[i-1].RunID) {
			t.Errorf("%s e%d: attempt %d is %+v", task, epoch, i+1, st.Entry)
		}
	}
	last := states[len(states)-1]
	n, _ := strconv.Atoi(task[1:])
	switch {
	case tr.outcome == polyloop.StopLLMError && len(last.Scores) != 0:
		t.Errorf("%s e%d: an llm_error outcome is scored %+v", task, epoch, last.Scores)
	case tr.outcome == polyloop.StopCompleted && (len(last.Scores) != 1 || (last.Scores[0].Value == 1) == crashWrong(n)):
		t.Errorf("%s e%d: scores %+v (wrong answer: %v)", task, epoch, last.Scores, crashWrong(n))
	}
}

// checkCrashStats compares polyloop stats --sweep --json with the ground
// truth computed from the faults.
// The tokens the faults give are the known tokens: a call cut by a kill
// left an intent without a result (unknown, flagged), and its retry after
// the resume got the same usage.
func checkCrashStats(t *testing.T, dir string, unknown int) {
	var stdout, stderr bytes.Buffer
	if code := execute([]string{"stats", "--sweep", crashSweep, "--json", "--store", "sqlite:" + filepath.Join(dir, "runs.db")}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("polyloop stats exited %d: %s", code, stderr.String())
	}
	var got sweep.Stats
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil || len(got.Groups) != 1 {
		t.Fatalf("stats: %v\n%s", err, stdout.String())
	}
	g := got.Groups[0]
	outcomes := map[polyloop.StopReason]int{}
	attempts := map[polyloop.StopReason]map[string]int{}
	runStops := map[polyloop.StopReason]int{}
	runs, tokens := 0, int64(0)
	var values []float64
	var clusters []string
	perTask := map[string][2]int{} // scored, correct
	for i := 1; i <= crashTasks; i++ {
		task := "t" + strconv.Itoa(i)
		for e := 1; e <= crashEpochs; e++ {
			tr := coordTruth(task, e)
			outcomes[tr.outcome]++
			if attempts[tr.outcome] == nil {
				attempts[tr.outcome] = map[string]int{}
			}
			attempts[tr.outcome][strconv.Itoa(tr.attempts)]++
			for a := 1; a <= tr.attempts; a++ {
				runs++
				switch crashFault(task, e, a) {
				case 0:
					runStops[polyloop.StopCompleted]++
					tokens += 30
				case 1:
					runStops[polyloop.StopLLMError]++
				case 2:
					runStops[polyloop.StopLLMError]++
					tokens += 15
				}
			}
			if tr.outcome == polyloop.StopCompleted {
				v := 1.0
				if crashWrong(i) {
					v = 0
				}
				values, clusters = append(values, v), append(clusters, task)
				c := perTask[task]
				c[0]++
				c[1] += int(v)
				perTask[task] = c
			}
		}
	}
	if g.Outcomes != crashTasks*crashEpochs || g.Settled != g.Outcomes || len(g.Unsettled) != 0 {
		t.Errorf("outcomes %d, settled %d, unsettled %v", g.Outcomes, g.Settled, g.Unsettled)
	}
	for _, r := range []polyloop.StopReason{polyloop.StopCompleted, polyloop.StopLLMError} {
		if g.OutcomeStopReasons[r] != outcomes[r] || g.Runs.StopReasons[r] != runStops[r] {
			t.Errorf("%s: %d outcomes and %d runs, the faults make %d and %d", r, g.OutcomeStopReasons[r], g.Runs.StopReasons[r], outcomes[r], runStops[r])
		}
		for n, c := range attempts[r] {
			if g.Attempts[r][n] != c {
				t.Errorf("%s after %s attempts: %d outcomes, the faults make %d", r, n, g.Attempts[r][n], c)
			}
		}
	}
	if g.Runs.Runs != runs || g.Runs.Unfinished != 0 || g.TokensSum != tokens || g.TokensUnknownRuns != unknown {
		t.Errorf("%d runs (%d unfinished), %d tokens (%d runs partly unknown); the faults make %d runs, %d tokens (%d runs cut mid-call)",
			g.Runs.Runs, g.Runs.Unfinished, g.TokensSum, g.TokensUnknownRuns, runs, tokens, unknown)
	}
	mean, se := clusteredMean(values, clusters)
	a := g.Accuracy
	if a == nil || a.N != len(values) || math.Abs(a.Mean-mean) > 1e-12 || a.SE == nil || math.Abs(*a.SE-se) > 1e-12 ||
		math.Abs(*a.Low-(mean-1.96*se)) > 1e-12 || g.Scored != len(values) || g.Unscored != outcomes[polyloop.StopLLMError] {
		t.Errorf("accuracy %+v (scored %d, unscored %d), the faults make mean %v, SE %v over %d", a, g.Scored, g.Unscored, mean, se, len(values))
	}
	for _, p := range g.PassAtK {
		sum, pairs := 0.0, 0
		for _, c := range perTask {
			if c[0] >= p.K {
				pairs++
				if c[1] > 0 { // a task's answers are all right or all wrong
					sum++
				}
			}
		}
		if p.Pairs != pairs || math.Abs(p.Mean-sum/float64(pairs)) > 1e-12 {
			t.Errorf("pass@%d %+v, the faults make %v over %d tasks", p.K, p, sum/float64(pairs), pairs)
		}
	}
	if len(g.PassAtK) != crashEpochs {
		t.Errorf("pass@k for k = 1 … %d: %+v", crashEpochs, g.PassAtK)
	}
}

// clusteredMean is the mean of values and its standard error clustered by
// cluster, written out here apart from the code under test:
// SE² = C/(C−1) · Σ_c (Σ_{i∈c} (x_i − x̄))² / N².
func clusteredMean(values []float64, clusters []string) (float64, float64) {
	var sum float64
	for _, v := range values {
		sum += v
	}
	mean := sum / float64(len(values))
	resid := map[string]float64{}
	for i, v := range values {
		resid[clusters[i]] += v - mean
	}
	var ss float64
	for _, r := range resid {
		ss += r * r
	}
	c, n := float64(len(resid)), float64(len(values))
	return mean, math.Sqrt(c / (c - 1) * ss / (n * n))
}
