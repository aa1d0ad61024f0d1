package sweepqueue

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/toolcallparser"
)

// A scorer that fails never lets its job complete silently: the job is
// retried (scoring only what is missing) and cancelled at FailAttempts,
// with the scorer's error as the job's error, which Status lists; the
// run stays finished and unscored.
func TestWorkerScorerFailureIsNotCompleted(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  sweep.CommandOptions
		want string
	}{
		{"exit", sweep.CommandOptions{Args: []string{"sh", "-c", "echo broken >&2; exit 7"}}, "exited with status 7"},
		{"timeout", sweep.CommandOptions{Args: []string{"sleep", "10"}, Timeout: 100 * time.Millisecond}, "timeout_ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			sc, err := sweep.Command("check", tc.cmd)
			if err != nil {
				t.Fatal(err)
			}
			s := newScoredSweep(t, "scorefail", 1, &stepModel{steps: 1}, sweep.RetryPolicy{}, sc)
			if _, err := f.q.Enqueue(ctx, s, f.store); err != nil {
				t.Fatal(err)
			}
			var ev events
			f.startWorker(t, s, &ev, WorkerOptions{FailAttempts: 2})
			st := f.waitSettled(t, 30*time.Second)
			if st.States["completed"] != 0 || st.States["cancelled"] != 1 || len(st.Cancelled) != 1 {
				t.Fatalf("states %v, cancelled %+v: want the job cancelled, never completed", st.States, st.Cancelled)
			}
			c := st.Cancelled[0]
			if c.Attempt != 2 || !strings.Contains(c.Error, "scorer check") || !strings.Contains(c.Error, tc.want) {
				t.Fatalf("cancelled job: %+v; want attempt 2 with the scorer's error (%q)", c, tc.want)
			}
			if got := countAction(ev.list(), Retry); got != 1 {
				t.Fatalf("%d retries before the cancellation, want 1", got)
			}
			runs, err := f.store.Runs(ctx, []string{c.RunID})
			if err != nil || len(runs) != 1 || runs[0].Run == nil || !runs[0].Run.Finished || len(runs[0].Scores) != 0 {
				t.Fatalf("the run: %+v, %v; want finished and unscored", runs, err)
			}
		})
	}
}

// A model-graded scorer's grading run is not refused by the slice's stop
// request: a run that finishes after its slice ended is graded, and its
// job completes with the grade.
func TestWorkerGradesAfterTheSliceEnded(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	grader := &sweep.Agent{
		Agent:    polyloop.Agent{Name: "grader", Limits: polyloop.Limits{MaxSteps: 2}, Model: polyloop.ModelParams{Provider: "script", Model: "grade"}},
		Model:    gradeModel{},
		Parser:   toolcallparser.New(toolcallparser.Options{}),
		Executor: adder(),
	}
	judge := sweep.ModelGraded("judge", sweep.GraderOptions{Grader: grader, Attempts: 1})
	// One model call of 300 ms, in a slice of 100 ms: the stop request is
	// made while the call is under way, and the run finishes (a final
	// answer) after it.
	s := newScoredSweep(t, "grade", 2, &stepModel{steps: 0, delay: 300 * time.Millisecond}, sweep.RetryPolicy{}, judge)
	if _, err := f.q.Enqueue(ctx, s, f.store); err != nil {
		t.Fatal(err)
	}
	var ev events
	f.startWorker(t, s, &ev, WorkerOptions{Slice: 100 * time.Millisecond, FailAttempts: 1})
	st := f.waitSettled(t, 30*time.Second)
	if st.States["completed"] != 2 || len(st.States) != 1 {
		t.Fatalf("states %v, cancelled %+v; want 2 completed", st.States, st.Cancelled)
	}
	for _, e := range ev.list() {
		if e.Verdict.Action == Retry || e.Verdict.Action == Cancel {
			t.Fatalf("execution %+v: want no failure", e)
		}
	}
	for _, id := range []string{"t1", "t2"} {
		runID := sweep.RunID(sweep.CoordID("grade", agentHash(t, f, "grade"), id, 1), 1)
		if j := f.job(t, runID); j.output["scores"] == nil || j.output["scores"].(map[string]any)["judge"] != 1.0 {
			t.Fatalf("job of %s: %+v; want the judge's grade", runID, j)
		}
	}
}

// gradeModel grades every answer correct.
type gradeModel struct{}

func (gradeModel) Complete(context.Context, polyloop.ModelRequest) (polyloop.ModelReply, error) {
	return polyloop.ModelReply{Text: "Fine.\nGRADE: C", Usage: polyloop.Usage{InputTokens: 3, OutputTokens: 2}, Attempts: 1}, nil
}
