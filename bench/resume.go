package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polyloop/polyloop"
)

// stopBefore is a model client that cancels its run at the call of step
// stop, before that call happens: the run stops as a process killed while
// waiting for the model would, its log ending with the intent of that call.
type stopBefore struct {
	polyloop.ModelClient
	stop   int
	cancel context.CancelFunc
}

func (m stopBefore) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	if req.Step == m.stop {
		m.cancel()
		return polyloop.ModelReply{}, ctx.Err()
	}
	return m.ModelClient.Complete(ctx, req)
}

// Describe gives the wrapped client's identity, so that the wrapper leaves
// the run's snapshot as W's.
func (m stopBefore) Describe() polyloop.Component { return polyloop.Describe(m.ModelClient) }

// firstCall is a model client that notes when it is first called.
type firstCall struct {
	polyloop.ModelClient
	once sync.Once
	at   atomic.Int64 // UnixNano of the first call
}

func (m *firstCall) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	m.once.Do(func() { m.at.Store(time.Now().UnixNano()) })
	return m.ModelClient.Complete(ctx, req)
}

// Describe gives the wrapped client's identity (see stopBefore.Describe).
func (m *firstCall) Describe() polyloop.Component { return polyloop.Describe(m.ModelClient) }

// prepareStopped writes n runs of W, all stopped before their final model
// call (step S+1), to st, concurrently. It returns their run ids.
func prepareStopped(ctx context.Context, st polyloop.Store, w Workload, n int) ([]string, error) {
	model := w.Model()
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		ids[i] = fmt.Sprintf("stopped%03d", i)
		wg.Go(func() {
			runCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			r := w.RunnerWithModel(st, stopBefore{ModelClient: model, stop: w.Steps + 1, cancel: cancel})
			_, err := r.Run(runCtx, ids[i], w.Agent(), w.Task())
			if !errors.Is(err, context.Canceled) || ctx.Err() != nil {
				errs[i] = fmt.Errorf("preparing stopped run %s: want it cancelled at step %d, got %v", ids[i], w.Steps+1, err)
			}
		})
	}
	wg.Wait()
	return ids, errors.Join(errs...)
}

// resumeToFirstCall resumes a stopped run of w on st until its end and
// returns the moment of the first model call. It checks that the resume did
// what a run stopped before its final call needs: retry that call, complete.
func resumeToFirstCall(ctx context.Context, st polyloop.Store, w Workload, runID string) (time.Time, error) {
	model := &firstCall{ModelClient: w.Model()}
	res, err := w.RunnerWithModel(st, model).Resume(ctx, runID, w.Agent())
	if err != nil {
		return time.Time{}, err
	}
	if res.Plan == nil || res.Plan.Action != polyloop.PlanRetryModelCall {
		return time.Time{}, fmt.Errorf("resume of %s followed plan %v, want %s", runID, res.Plan, polyloop.PlanRetryModelCall)
	}
	if err := w.Check(res); err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, model.at.Load()), nil
}

// readAndPlan reads a run's log and plans its resume, timing each.
func readAndPlan(ctx context.Context, st polyloop.Store, runID string) (read, plan time.Duration, records int, err error) {
	t0 := time.Now()
	log, err := polyloop.ReadLog(ctx, st, runID)
	t1 := time.Now()
	if err != nil {
		return 0, 0, 0, err
	}
	p, err := polyloop.PlanResume(log)
	t2 := time.Now()
	if err != nil {
		return 0, 0, 0, err
	}
	if p.Action != polyloop.PlanRetryModelCall {
		return 0, 0, 0, fmt.Errorf("plan of %s is %s, want %s", runID, p.Action, polyloop.PlanRetryModelCall)
	}
	return t1.Sub(t0), t2.Sub(t1), len(log.Records), nil
}

// childResume is the resume child: open the store, resume, report the time
// from the process start to the first new model call.
func childResume(ctx context.Context, t childTask, entry time.Time) (res childResult, err error) {
	st, err := t.Store.open(ctx)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, st.close()) }()
	at, err := resumeToFirstCall(ctx, st.Store, Workload{Steps: t.Steps}, t.RunID)
	if err != nil {
		return res, err
	}
	res.StartToCall = at.Sub(time.Unix(0, t.ExecUnixNano))
	res.EntryToCall = at.Sub(entry)
	return res, nil
}

// childPlan is the plan child: open the store, read the log, plan; time each.
func childPlan(ctx context.Context, t childTask) (res childResult, err error) {
	t0 := time.Now()
	st, err := t.Store.open(ctx)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, st.close()) }()
	res.Open = time.Since(t0)
	res.Read, res.Plan, res.Records, err = readAndPlan(ctx, st.Store, t.RunID)
	return res, err
}
