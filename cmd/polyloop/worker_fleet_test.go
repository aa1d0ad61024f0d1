package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/funcexec"
	"github.com/polyloop/polyloop/pgstore"
	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/sweepqueue"
	"github.com/polyloop/polyloop/toolcallparser"
)

// The fleet test of issue 19: fleetTasks runs of one sweep enqueued on
// PostgreSQL and run by three `polyloop worker` processes (this test
// binary, with the sweep built in Go), whose scripted model takes
// fleetLatency per call and whose tool is a never-replay effect recorded
// in a table. One worker is SIGKILLed mid-way, one stopped with SIGTERM;
// the third finishes, with the killed worker's jobs rescued by River.
// Then: every run's log finished, no effect ran twice, no run was driven
// by two workers at once (the model's calls, recorded with their
// process, never overlap across processes for one run), the jobs' states
// match the runs, and polyloop stats --sweep equals the ground truth.

const (
	fleetTasks    = 60
	fleetEffects  = 3 // effect calls per run, then the answer
	fleetLatency  = 50 * time.Millisecond
	fleetSweep    = "fleet"
	fleetChildEnv = "POLYLOOP_FLEET_WORKER"
)

// fleetWrong names the tasks the model answers wrong: every fifth.
func fleetWrong(task int) bool { return task%5 == 0 }

func init() {
	if dsn := os.Getenv(fleetChildEnv); dsn != "" {
		os.Exit(fleetWorker(dsn))
	}
}

// fleetWorker is a child: polyloop worker on the fleet sweep.
func fleetWorker(dsn string) int {
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer pool.Close()
	resolveSweep = func(_ context.Context, _ sweep.Store, name string, _ int, _ func(string) (polyloop.EnvProvider, error)) (*sweep.Sweep, func(), error) {
		if name != fleetSweep {
			return nil, nil, fmt.Errorf("no sweep %s", name)
		}
		s, err := fleetSweepOf(pool)
		return s, func() {}, err
	}
	return execute([]string{"worker", "--queue", dsn, "--concurrency", "3", "--slice", "120ms", "--job-timeout", "3s",
		"--rescue-after", "4s", "--held-delay", "100ms"}, nil, os.Stdout, os.Stderr)
}

// fleetModel calls effect(n) fleetEffects times, then answers the last
// observation (plus one for the wrong tasks). Every call is recorded in
// the calls table with its process and its start and end.
type fleetModel struct{ pool *pgxpool.Pool }

func (fleetModel) Describe() polyloop.Component { return polyloop.Component{Name: "fleetModel"} }

func (m fleetModel) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	var id int64
	if err := m.pool.QueryRow(ctx, `INSERT INTO fleet.calls (run_id, step, pid, t0) VALUES ($1, $2, $3, clock_timestamp()) RETURNING id`,
		req.RunID, req.Step, os.Getpid()).Scan(&id); err != nil {
		return polyloop.ModelReply{}, err
	}
	select {
	case <-ctx.Done(): // the call ends here too: its end is recorded, lest it seem to last until the kill
		_, _ = m.pool.Exec(context.WithoutCancel(ctx), `UPDATE fleet.calls SET t1 = clock_timestamp() WHERE id = $1`, id)
		return polyloop.ModelReply{}, ctx.Err()
	case <-time.After(fleetLatency):
	}
	if _, err := m.pool.Exec(ctx, `UPDATE fleet.calls SET t1 = clock_timestamp() WHERE id = $1`, id); err != nil {
		return polyloop.ModelReply{}, err
	}
	usage := polyloop.Usage{InputTokens: 10, OutputTokens: 5}
	last := strings.TrimSpace(req.Messages[len(req.Messages)-1].Content)
	if req.Step <= fleetEffects {
		args, _ := json.Marshal(map[string]any{"n": json.Number(last), "run": req.RunID, "step": req.Step})
		return polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{{ID: "c" + strconv.Itoa(req.Step), Name: "effect", Args: args}}, Usage: usage, Attempts: 1}, nil
	}
	ref, err := sweep.ParseRunID(req.RunID)
	if err != nil {
		return polyloop.ModelReply{}, err
	}
	if n, _ := strconv.Atoi(strings.TrimPrefix(ref.TaskKey, "t")); fleetWrong(n) {
		last += "1"
	}
	return polyloop.ModelReply{Text: last, Usage: usage, Attempts: 1}, nil
}

// fleetSweepOf is the fleet sweep; its effect tool is never_replay and
// writes a row per call.
func fleetSweepOf(pool *pgxpool.Pool) (*sweep.Sweep, error) {
	ex := funcexec.New()
	funcexec.MustRegister(ex, "effect", "an effect that must not run twice", polyloop.NeverReplay, func(ctx context.Context, a struct {
		N    int    `json:"n"`
		Run  string `json:"run"`
		Step int    `json:"step"`
	}) (string, error) {
		if _, err := pool.Exec(ctx, `INSERT INTO fleet.effects (run_id, step, pid) VALUES ($1, $2, $3)`, a.Run, a.Step, os.Getpid()); err != nil {
			return "", err
		}
		// The effect takes a while after it happened, so that the SIGKILL
		// often cuts an action: done, its outcome not recorded.
		time.Sleep(fleetLatency / 2)
		return strconv.Itoa(a.N + 1), nil
	})
	agent := &sweep.Agent{
		Agent:    polyloop.Agent{Name: "effector", Limits: polyloop.Limits{MaxSteps: fleetEffects + 2}, Model: polyloop.ModelParams{Provider: "script", Model: "fleet"}},
		Model:    fleetModel{pool: pool},
		Parser:   toolcallparser.New(toolcallparser.Options{Tools: ex.ToolSpecs()}),
		Executor: ex,
	}
	var tasks sweep.TaskList
	for i := 1; i <= fleetTasks; i++ {
		tasks = append(tasks, sweep.Task{ID: "t" + strconv.Itoa(i), Input: strconv.Itoa(i), Target: []string{strconv.Itoa(i + fleetEffects)}})
	}
	return sweep.New(sweep.Definition{Name: fleetSweep, Agents: []*sweep.Agent{agent}, Tasks: tasks,
		Scorers: []sweep.Scorer{sweep.Exact("exact", sweep.MatchOptions{})}})
}

// fleetDatabase creates a database of its own for the test (the CLI uses
// the default schemas) and returns its DSN.
func fleetDatabase(t testing.TB) string {
	t.Helper()
	base := os.Getenv("POLYLOOP_TEST_POSTGRES")
	if base == "" {
		t.Skip("POLYLOOP_TEST_POSTGRES is not set")
	}
	ctx := context.Background()
	admin, err := pgxpool.New(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("polyloop_fleet_%d_%d", os.Getpid(), rand.IntN(1e6))
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close()
		t.Fatalf("the fleet test needs a database of its own: %v", err)
	}
	t.Cleanup(func() {
		admin.Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)")
		admin.Close()
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// fleetChild is a worker process.
type fleetChild struct {
	cmd  *exec.Cmd
	out  syncBuffer
	done chan struct{}
	code int
}

func startFleetChild(t testing.TB, dsn string) *fleetChild {
	return startChild(t, fleetChildEnv+"="+dsn)
}

// startChild starts this test binary with env added: a child process.
func startChild(t testing.TB, env ...string) *fleetChild {
	c := &fleetChild{done: make(chan struct{})}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.cmd.Wait()
		c.code = c.cmd.ProcessState.ExitCode()
		close(c.done)
	}()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.done
	})
	return c
}

func TestWorkerFleet(t *testing.T) {
	dsn := fleetDatabase(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE SCHEMA fleet;
		CREATE TABLE fleet.effects (run_id text NOT NULL, step int NOT NULL, pid int NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
		CREATE TABLE fleet.calls (id bigserial PRIMARY KEY, run_id text NOT NULL, step int NOT NULL, pid int NOT NULL, t0 timestamptz NOT NULL, t1 timestamptz)`); err != nil {
		t.Fatal(err)
	}
	store, err := pgstore.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	q, err := sweepqueue.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	s, err := fleetSweepOf(pool)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := q.Enqueue(ctx, s, store); err != nil || res.Inserted != fleetTasks {
		t.Fatalf("Enqueue = %+v, %v", res, err)
	}
	start := time.Now()
	children := []*fleetChild{startFleetChild(t, dsn), startFleetChild(t, dsn), startFleetChild(t, dsn)}
	killed, stopped := children[0], children[1]
	effects := func() int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM fleet.effects`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitEffects := func(n int) {
		for deadline := time.Now().Add(30 * time.Second); effects() < n; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("fewer than %d effects after 30 s", n)
			}
		}
	}
	total := fleetTasks * fleetEffects
	waitEffects(total / 4)
	killed.cmd.Process.Signal(syscall.SIGKILL)
	<-killed.done
	killedAt := time.Now()
	waitEffects(total / 2)
	stopped.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-stopped.done:
	case <-time.After(60 * time.Second):
		t.Fatal("the worker stopped with SIGTERM did not exit")
	}
	if stopped.code != 0 || !strings.Contains(stopped.out.String(), "stopped:") {
		t.Fatalf("SIGTERM: exit %d\n%s", stopped.code, stopped.out.String())
	}
	var st *sweepqueue.Status
	// The deadlines guard against a hang; they time nothing.
	for deadline := time.Now().Add(120 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if st, err = q.Status(ctx, sweepqueue.StatusOptions{}); err != nil {
			t.Fatal(err)
		}
		if st.Pending() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs left after 120 s: %v\n%s", st.States, children[2].out.String())
		}
	}
	t.Logf("settled in %s: %v", time.Since(start).Round(time.Millisecond), st.States)
	last := children[2]
	last.cmd.Process.Signal(syscall.SIGTERM)
	<-last.done

	pids := map[int]string{killed.cmd.Process.Pid: "killed", stopped.cmd.Process.Pid: "stopped", last.cmd.Process.Pid: "last"}
	checkFleetEffects(t, pool, pids)
	checkFleetExclusion(t, pool, killedAt)
	unknown := checkFleetRuns(t, ctx, store, pool, s, killed.cmd.Process.Pid)
	if st.States["cancelled"] != len(unknown) || st.States["completed"] != fleetTasks-len(unknown) {
		t.Errorf("jobs %v; the runs say %d resume_state_unknown (cancelled) and the rest completed", st.States, len(unknown))
	}
	for _, c := range st.Cancelled {
		if !unknown[c.RunID] || !strings.Contains(c.Error, "resume_state_unknown") {
			t.Errorf("cancelled job %+v is not a resume_state_unknown run's", c)
		}
	}
	checkFleetStats(t, dsn, unknown)
	checkFleetAttempts(t, pool, workerID(t, killed))
}

// workerID is the id a worker printed when it started.
func workerID(t testing.TB, c *fleetChild) string {
	m := regexp.MustCompile(`worker (\S+): taking jobs`).FindStringSubmatch(c.out.String())
	if m == nil {
		t.Fatalf("the worker did not say its id:\n%s", c.out.String())
	}
	return m[1]
}

// checkFleetAttempts: a job used a second attempt only if the killed
// worker had it (River's rescuer retried it: the jobs it ran, and the ones
// whose snooze its completer had not yet written); the slices' snoozes and
// the graceful stop used none.
func checkFleetAttempts(t *testing.T, pool *pgxpool.Pool, killedID string) {
	rows, err := pool.Query(context.Background(), `SELECT args->>'run_id', attempt, $1 = ANY(attempted_by), cardinality(attempted_by)
		FROM polyloop_river.river_job`, killedID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	executions, rescued := 0, 0
	for rows.Next() {
		var run string
		var attempt, n int
		var byKilled bool
		if err := rows.Scan(&run, &attempt, &byKilled, &n); err != nil {
			t.Fatal(err)
		}
		executions += n
		switch {
		case attempt > 2 || (attempt == 2 && !byKilled):
			t.Errorf("the job of %s used %d attempts (the killed worker had it: %v)", run, attempt, byKilled)
		case attempt == 2:
			rescued++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d executions of %d jobs (slices and snoozes included), %d rescued from the killed worker", executions, fleetTasks, rescued)
	if executions <= fleetTasks {
		t.Errorf("%d executions of %d jobs: no run was cut into slices", executions, fleetTasks)
	}
}

// checkFleetEffects: no effect ran twice, and every worker ran some.
func checkFleetEffects(t *testing.T, pool *pgxpool.Pool, pids map[int]string) {
	ctx := context.Background()
	var dups int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM fleet.effects GROUP BY run_id, step HAVING count(*) > 1) d`).Scan(&dups); err != nil {
		t.Fatal(err)
	}
	if dups != 0 {
		t.Errorf("%d never-replay effects ran twice", dups)
	}
	rows, err := pool.Query(ctx, `SELECT pid, count(*) FROM fleet.effects GROUP BY pid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	by := map[string]int{}
	for rows.Next() {
		var pid, n int
		if err := rows.Scan(&pid, &n); err != nil {
			t.Fatal(err)
		}
		by[pids[pid]] += n
	}
	t.Logf("effects by worker: %v", by)
	for _, w := range []string{"killed", "stopped", "last"} {
		if by[w] == 0 {
			t.Errorf("the %s worker ran no effect: the test did not test it", w)
		}
	}
}

// checkFleetExclusion: for each run, no two model calls overlap in time
// (a call cut by the SIGKILL lasts until the kill): a run's driver makes
// one call at a time, so an overlap is two drivers — of two processes, or
// two executions in one.
func checkFleetExclusion(t *testing.T, pool *pgxpool.Pool, killedAt time.Time) {
	var overlaps int
	var example string
	err := pool.QueryRow(context.Background(), `
		WITH c AS (SELECT id, run_id, t0, coalesce(t1, $1) AS t1 FROM fleet.calls)
		SELECT count(*), coalesce(min(a.run_id), '') FROM c a JOIN c b
		ON a.run_id = b.run_id AND a.id < b.id AND a.t0 < b.t1 AND b.t0 < a.t1`, killedAt).Scan(&overlaps, &example)
	if err != nil {
		t.Fatal(err)
	}
	if overlaps != 0 {
		t.Errorf("%d pairs of model calls of one run overlap in time: two drivers (e.g. %s)", overlaps, example)
	}
}

// checkFleetRuns: every run's log finished; the ones that finished
// resume_state_unknown are runs whose never-replay action the SIGKILL cut
// between its intent and its result (the effect ran or not: nobody
// knows), so the killed worker drove them last, at most one per job it
// ran at once. It returns them.
func checkFleetRuns(t *testing.T, ctx context.Context, store *pgstore.Store, pool *pgxpool.Pool, s *sweep.Sweep, killedPID int) map[string]bool {
	m := s.Manifest()
	var ids []string
	for i := 1; i <= fleetTasks; i++ {
		ids = append(ids, sweep.RunID(sweep.CoordID(fleetSweep, m.Agents[0].Hash, "t"+strconv.Itoa(i), 1), 1))
	}
	states, err := store.Runs(ctx, ids)
	if err != nil || len(states) != fleetTasks {
		t.Fatalf("runs: %d, %v", len(states), err)
	}
	unknown := map[string]bool{}
	for _, st := range states {
		switch {
		case st.Run == nil || !st.Run.Finished:
			t.Errorf("run %s did not finish: %+v", st.RunID, st.Run)
		case st.Run.StopReason == polyloop.StopResumeStateUnknown:
			unknown[st.RunID] = true
			// The resume that finds the open never-replay action makes no
			// model call: the run's last call is the killed worker's.
			var pid int
			if err := pool.QueryRow(ctx, `SELECT pid FROM fleet.calls WHERE run_id = $1 ORDER BY t0 DESC LIMIT 1`, st.RunID).Scan(&pid); err != nil || pid != killedPID {
				t.Errorf("run %s finished resume_state_unknown, but its last model call was not the killed worker's (pid %d, %v)", st.RunID, pid, err)
			}
		case st.Run.StopReason != polyloop.StopCompleted:
			t.Errorf("run %s finished %s", st.RunID, st.Run.StopReason)
		}
	}
	if len(unknown) > 3 {
		t.Errorf("%d runs resume_state_unknown; the killed worker ran 3 at most", len(unknown))
	}
	t.Logf("%d runs resume_state_unknown (an action cut by the SIGKILL)", len(unknown))
	return unknown
}

// checkFleetStats: polyloop stats --sweep against the ground truth.
func checkFleetStats(t *testing.T, dsn string, unknown map[string]bool) {
	var stdout, stderr bytes.Buffer
	if code := execute([]string{"stats", "--sweep", fleetSweep, "--json", "--store", dsn}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("polyloop stats exited %d: %s", code, stderr.String())
	}
	var got sweep.Stats
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil || len(got.Groups) != 1 {
		t.Fatalf("stats: %v\n%s", err, stdout.String())
	}
	g := got.Groups[0]
	completed, correct := 0, 0
	for i := 1; i <= fleetTasks; i++ {
		id := ""
		for u := range unknown {
			if ref, _ := sweep.ParseRunID(u); ref.TaskKey == "t"+strconv.Itoa(i) {
				id = u
			}
		}
		if id != "" {
			continue
		}
		completed++
		if !fleetWrong(i) {
			correct++
		}
	}
	if g.Outcomes != fleetTasks || g.Settled != fleetTasks || len(g.Unsettled) != 0 {
		t.Errorf("outcomes %d, settled %d, unsettled %v; want %d settled", g.Outcomes, g.Settled, g.Unsettled, fleetTasks)
	}
	if g.OutcomeStopReasons[polyloop.StopCompleted] != completed || g.OutcomeStopReasons[polyloop.StopResumeStateUnknown] != len(unknown) {
		t.Errorf("stop reasons %v; want completed %d, resume_state_unknown %d", g.OutcomeStopReasons, completed, len(unknown))
	}
	if g.Runs.Runs != fleetTasks || g.Runs.Finished != fleetTasks {
		t.Errorf("runs %+v; want %d, all finished", g.Runs, fleetTasks)
	}
	want := float64(correct) / float64(fleetTasks)
	if g.Accuracy == nil || g.Accuracy.N != fleetTasks || diff(g.Accuracy.Mean, want) > 1e-9 {
		t.Errorf("accuracy %+v; want %.4f over %d", g.Accuracy, want, fleetTasks)
	}
}

func diff(a, b float64) float64 {
	if a > b {
		return a - b
	}
	return b - a
}

// syncBuffer is a bytes.Buffer safe for a writer and readers at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
