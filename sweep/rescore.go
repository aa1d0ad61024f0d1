package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/sweep/ledger"
)

// RescoreResult counts what Rescore did.
type RescoreResult struct {
	// Scored counts the runs that every scorer asked to score them
	// scored; Partly the runs that one of them or more could not score
	// (the others' scores are written); Unfinished the runs left alone
	// because they have not finished; Retried the finished runs whose
	// stop reason the sweep retries, which are never scored.
	Scored, Partly, Unfinished, Retried int
	// FailedBy counts, by scorer name, the runs the scorer could not
	// score.
	FailedBy map[string]int
	// Failures are the scorers that could not score, by run (the first
	// maxRunErrors).
	Failures     []RunError
	FailureCount int
}

// Rescore scores the sweep's finished runs again without running anything:
// the runs of runIDs, or every run of the sweep when runIDs is nil. Each
// run's answer is read from its log; every scorer scores it (or, with
// missingOnly, only those whose score is missing or stale) and the scores
// replace the stored ones. A model-graded scorer reuses its grading run
// when one exists for the same grader. Runs are scored Concurrency at a
// time. Errors: a store failure, a run id of another sweep (ErrUnknownRun).
func (s *Sweep) Rescore(ctx context.Context, store Store, runIDs []string, missingOnly bool) (RescoreResult, error) {
	res := RescoreResult{FailedBy: map[string]int{}}
	var mu sync.Mutex
	jobs := make(chan ledger.State)
	var wg sync.WaitGroup
	var firstErr error
	for range max(s.def.Concurrency, 1) {
		wg.Go(func() {
			for st := range jobs {
				out, err := s.rescoreOne(ctx, store, st, missingOnly)
				mu.Lock()
				switch {
				case len(out.ScoreErrors) > 0:
					res.Partly++
				case len(out.Scores) > 0:
					res.Scored++
				}
				for _, f := range out.ScoreErrors {
					res.FailureCount++
					if se, ok := f.(*ScoreError); ok {
						res.FailedBy[se.Scorer]++
					}
					if len(res.Failures) < maxRunErrors {
						res.Failures = append(res.Failures, RunError{RunID: st.RunID, Err: f})
					}
				}
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	err := s.eachState(ctx, store, runIDs, func(st ledger.State) error {
		switch {
		case st.Run == nil || !st.Run.Finished:
			res.Unfinished++
			return nil
		case s.def.Retry.Retried(st.Run.StopReason):
			res.Retried++
			return nil
		}
		select {
		case jobs <- st:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	close(jobs)
	wg.Wait()
	if err == nil {
		err = firstErr
	}
	return res, err
}

// eachState calls fn for the states of runIDs, or of every run of the
// sweep when runIDs is nil.
func (s *Sweep) eachState(ctx context.Context, store Store, runIDs []string, fn func(ledger.State) error) error {
	if runIDs != nil {
		states, err := store.Runs(ctx, runIDs)
		if err != nil {
			return err
		}
		if len(states) != len(runIDs) {
			return fmt.Errorf("%w: of the %d runs given, %d are runs of a sweep", ErrUnknownRun, len(runIDs), len(states))
		}
		for _, st := range states {
			if st.Sweep != s.def.Name {
				return fmt.Errorf("%w: %s belongs to the sweep %s", ErrUnknownRun, st.RunID, st.Sweep)
			}
			if err := fn(st); err != nil {
				return err
			}
		}
		return nil
	}
	after := ""
	for {
		page, err := store.Page(ctx, s.def.Name, after, statsPage)
		if err != nil {
			return err
		}
		for _, st := range page {
			if err := fn(st); err != nil {
				return err
			}
		}
		if len(page) < statsPage {
			return nil
		}
		after = page[len(page)-1].RunID
	}
}

// rescoreOne scores one finished run from its log.
func (s *Sweep) rescoreOne(ctx context.Context, store Store, st ledger.State, missingOnly bool) (Outcome, error) {
	var task Task
	if err := json.Unmarshal(st.Task, &task); err != nil {
		return Outcome{}, fmt.Errorf("sweep: the task of %s in the ledger: %w", st.RunID, err)
	}
	log, err := polyloop.ReadLog(ctx, store, st.RunID)
	if err != nil {
		return Outcome{}, err
	}
	fin := log.Finished()
	if fin == nil {
		return Outcome{}, nil
	}
	in := ScoreInput{RunID: st.RunID, Task: task, StopReason: fin.StopReason, store: store, slots: s.slots}
	if fin.StopReason == polyloop.StopCompleted {
		in.Answer = fin.FinalAnswer
	}
	have := st.Scores
	if !missingOnly {
		have = nil
	}
	return s.score(ctx, store, Outcome{Entry: st.Entry}, in, have)
}
