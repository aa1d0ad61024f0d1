package storetest

import (
	"context"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/workload"
)

// RunW runs workload W to completion as runID with r (one of w's runners)
// and checks the result with w.Check.
func RunW(ctx context.Context, w workload.W, r *polyloop.Runner, runID string) error {
	res, err := r.Run(ctx, runID, w.Agent(), w.Task())
	if err != nil {
		return err
	}
	return w.Check(res)
}
