package faultcampaign

import (
	"context"
	"flag"
	"testing"

	"github.com/polyloop/polyloop/memstore"
)

var (
	seed = flag.Uint64("campaign.seed", 14, "the seed of the fault campaign")
	runs = flag.Int("campaign.runs", 1000, "the runs of the fault campaign")
)

// TestCampaignOnMemstore performs the campaign on the in-memory store and
// compares every run's log with what its plan says it must hold.
func TestCampaignOnMemstore(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	results := Perform(context.Background(), st, Generate(*seed, *runs), 0, nil)
	failed := 0
	for _, r := range results {
		if err := CheckLog(context.Background(), st, r); err != nil {
			failed++
			if failed <= 20 {
				t.Errorf("%s (%s, fault %+v, resume %v, parallel %v): %v\n  turns %+v, limits steps %d tokens %d cost %g",
					r.Plan.RunID, r.Plan.Agent, r.Plan.Fault, r.Plan.Resume, r.Plan.Parallel, err, r.Plan.Turns, r.Plan.MaxSteps, r.Plan.MaxTokens, r.Plan.MaxCostUSD)
			}
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d runs differ from their plans (seed %d)", failed, len(results), *seed)
	}
}

// TestCampaignCoversEveryFault: the seeded campaign makes every fault fire,
// in runs left unfinished and in runs resumed, ends runs with every stop
// reason, and has runs of each kind of unknown usage and of parallel
// batches — so that a change to the generator cannot quietly narrow what
// the campaign checks.
func TestCampaignCoversEveryFault(t *testing.T) {
	t.Parallel()
	plans := Generate(*seed, *runs)
	fired, resumed := map[FaultKind]int{}, map[FaultKind]int{}
	reasons := map[string]int{}
	var unfinished, tokensUnknown, costOnlyUnknown, unknownCalls, unknownActions, parallel int
	for _, p := range plans {
		e := Expect(p)
		if e.Fired {
			fired[p.Fault.Kind]++
			if p.Resume {
				resumed[p.Fault.Kind]++
			}
		}
		if e.Finished {
			reasons[string(e.StopReason)]++
		} else {
			unfinished++
		}
		tt := e.Totals
		switch {
		case tt.TokensUnknown:
			tokensUnknown++
		case tt.CostUnknown:
			costOnlyUnknown++
		}
		if tt.UnknownModelCalls > 0 {
			unknownCalls++
		}
		if tt.UnknownActions > 0 {
			unknownActions++
		}
		if p.Parallel {
			parallel++
		}
	}
	for k := CancelModel; k <= CancelBeforeStart; k++ {
		if fired[k] < 20 || (k != CancelBeforeStart && resumed[k] < 10) {
			t.Errorf("fault %s fired in %d runs (%d resumed); want at least 20 (10)", k, fired[k], resumed[k])
		}
	}
	for _, r := range []string{"completed", "max_steps", "token_budget", "cost_budget", "llm_error", "env_error", "resume_state_unknown"} {
		if reasons[r] < 5 {
			t.Errorf("%d runs end %s; want at least 5", reasons[r], r)
		}
	}
	for what, n := range map[string]int{"unfinished": unfinished, "tokens unknown": tokensUnknown, "only the cost unknown": costOnlyUnknown,
		"model calls of unknown outcome": unknownCalls, "actions of unknown outcome": unknownActions, "parallel batches": parallel} {
		if n < 20 {
			t.Errorf("%d runs with %s; want at least 20", n, what)
		}
	}
}
