package trajectory_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runfixture"
	"github.com/polyloop/polyloop/internal/trajectory"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
)

// pagedRun is the log of a finished run of n steps, one echo action each.
func pagedRun(t *testing.T, n int) polyloop.RunLog {
	t.Helper()
	st := memstore.New()
	turns := make([]scriptmodel.Turn, 0, n+1)
	for i := range n {
		turns = append(turns, runfixture.Echo(fmt.Sprintf("c%d", i), fmt.Sprintf("step %d", i+1)))
	}
	turns = append(turns, scriptmodel.Reply("done"))
	agent := runfixture.Agent("paged", "")
	agent.Limits.MaxSteps = n + 1
	runfixture.Run(t, runfixture.Runner(st, runfixture.NewClock(runfixture.Base), 0.000001, turns...), "paged", agent, "a task")
	log, err := polyloop.ReadLog(context.Background(), st, "paged")
	if err != nil {
		t.Fatal(err)
	}
	log.RunID = "paged"
	return log
}

// TestBuildPageKeepsThePagesSteps: BuildPage holds exactly the steps of
// its page as Build has them — page 0 the first page of a finished run and
// the last of an unfinished one — says how many steps the run has, and
// marks the run's last step running even when it is on another page.
func TestBuildPageKeepsThePagesSteps(t *testing.T) {
	t.Parallel()
	finished := pagedRun(t, 25)
	cut := len(finished.Records) - 1 // an unfinished run: the last step's model call has no result
	for finished.Records[cut].Body.Kind() != polyloop.KindModelCallIntent {
		cut--
	}
	unfinished := polyloop.RunLog{RunID: "paged", Records: finished.Records[:cut+1]}
	const per = 10
	for name, log := range map[string]polyloop.RunLog{"finished": finished, "unfinished": unfinished} {
		whole := trajectory.Build(log)
		n := len(whole.Steps)
		for page := 0; page <= 4; page++ {
			got := trajectory.BuildPage(log, trajectory.Page{Number: page, Per: per})
			from := (page - 1) * per
			if page == 0 {
				from = 0
				if whole.Finished == nil {
					from = (n - 1) / per * per
				}
			}
			from = min(from, n)
			want := whole.Steps[from:min(from+per, n)]
			if got.StepCount != n || got.FirstIndex != from {
				t.Errorf("%s page %d: %d steps from %d, want %d from %d", name, page, got.StepCount, got.FirstIndex, n, from)
			}
			if !reflect.DeepEqual(got.Steps, want) && !(len(got.Steps) == 0 && len(want) == 0) {
				t.Errorf("%s page %d: steps %d..%d, want those of Build", name, page, len(got.Steps), len(want))
			}
			if !reflect.DeepEqual(got.Totals, whole.Totals) || !reflect.DeepEqual(got.Plan, whole.Plan) || !reflect.DeepEqual(got.Invocations, whole.Invocations) {
				t.Errorf("%s page %d: totals, plan or invocations differ from Build's", name, page)
			}
		}
	}
	whole, first := trajectory.Build(unfinished), trajectory.BuildPage(unfinished, trajectory.Page{Number: 1, Per: per})
	holder := polyloop.LeaseOwner{Host: "h", PID: 1}
	whole.MarkRunning(holder)
	first.MarkRunning(holder)
	if whole.Totals.UnknownModelCalls != 0 || first.Totals != whole.Totals {
		t.Errorf("running: page 1's totals %+v, Build's %+v (the last step's call is in flight, not unknown)", first.Totals, whole.Totals)
	}
	if l := first.Last(); l == nil || !l.ModelCalls[len(l.ModelCalls)-1].InFlight {
		t.Errorf("page 1 of a running run: its last step %+v is not marked in flight", l)
	}
}
