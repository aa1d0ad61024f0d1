package trajectory

import (
	"context"

	"github.com/polyloop/polyloop"
)

// Probe asks the store whether a live process drives the run now — the
// live holder of its lease (polyloop.LeaseProber) — and, when one does,
// marks the trajectory running (MarkRunning). It takes no lease. A finished
// run, or a store that cannot tell, is left as it is.
func Probe(ctx context.Context, st polyloop.Store, t *Trajectory) error {
	if t.Finished != nil {
		return nil
	}
	holder, err := Holder(ctx, st, t.RunID)
	if holder != nil {
		t.MarkRunning(*holder)
	}
	return err
}

// Holder is the live holder of the run's lease, nil when there is none or
// the store cannot tell (it is not a polyloop.LeaseProber). It takes no
// lease.
func Holder(ctx context.Context, st polyloop.Store, runID string) (*polyloop.LeaseOwner, error) {
	p, ok := st.(polyloop.LeaseProber)
	if !ok {
		return nil, nil
	}
	holder, live, err := p.LiveHolder(ctx, runID)
	if err != nil || !live {
		return nil, err
	}
	return &holder, nil
}

// MarkRunning records that holder drives the run now. What its log holds
// at the tail without a result — the latest attempt of the last step's
// model call, the last step's actions not replaced by a later attempt — is
// under way, not of unknown outcome: those executions are marked InFlight
// and left out of Totals' unknown counts. There is no resume plan: a resume
// would be refused while the holder lives.
func (t *Trajectory) MarkRunning(holder polyloop.LeaseOwner) {
	t.Running, t.Plan = &holder, nil
	last := t.Last()
	if last == nil {
		return
	}
	if n := len(last.ModelCalls); n > 0 && last.ModelCalls[n-1].Unknown {
		c := last.ModelCalls[n-1]
		c.Unknown, c.InFlight = false, true
		t.Totals.UnknownModelCalls--
	}
	for _, a := range last.Actions {
		if a.Unknown && !a.Replayed {
			a.Unknown, a.InFlight = false, true
			t.Totals.UnknownActions--
		}
	}
}

// Last is the run's last step, whether or not its page is in Steps; nil
// when the run has none.
func (t *Trajectory) Last() *Step {
	if t.last == nil && len(t.Steps) > 0 { // a trajectory not built here
		return t.Steps[len(t.Steps)-1]
	}
	return t.last
}
