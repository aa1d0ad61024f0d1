package polylooptest

import (
	"fmt"
)

func checkStoreReopen(e *env, h StoreHarness) error {
	if h.Reopen == nil {
		return skipf("the harness gives no Reopen, so a restart cannot be simulated")
	}
	s, run := h.New(e.t), "polylooptest-reopen"
	recs := records(0, sampleBodies(run, 4096)...)
	if err := appendOK(e.ctx, s, run, recs[:4]...); err != nil {
		return err
	}
	if err := appendOK(e.ctx, s, run, recs[4:6]...); err != nil {
		return err
	}
	s = h.Reopen(e.t, s)
	if err := expectLog(e.ctx, s, run, recs[:6]); err != nil {
		return tag(ruleDurable, fmt.Errorf("after Reopen: %w", err))
	}
	if err := conflict(e.ctx, s, run, "seq 5 again after Reopen", recs[:6], intents(5, 1, "x")...); err != nil {
		return err
	}
	if err := appendOK(e.ctx, s, run, recs[6:]...); err != nil {
		return fmt.Errorf("after Reopen: %w", err)
	}
	return tag(ruleDurable, expectLog(e.ctx, s, run, recs))
}
