package replaymodel

import (
	"context"

	"github.com/polyloop/polyloop"
)

// Replay re-runs the recorded trajectory of src as a new run, newID (empty:
// a new ULID): the model is a Client answering from src's log (with opts),
// everything else is runner's — its parser and executor run for real,
// without spending anything on a model. The new run is linked to src
// (RunStarted.ReplayOf) and runs src's task under agent. It returns the
// replay's result and where it departs from src (polyloop.DiffRuns of the two
// logs): with an unchanged configuration, nowhere; with a new parser or
// executor, the first step whose decision or outcome differs.
//
// runner is copied; its Model is not used. Errors are Run's; a src that is
// not a valid recorded run is an error for which errors.Is(err,
// polyloop.ErrCorruptLog) holds.
func Replay(ctx context.Context, runner polyloop.Runner, src polyloop.RunLog, newID string, agent polyloop.Agent, opts Options) (polyloop.RunResult, polyloop.RunDiff, error) {
	client, err := New(src, opts)
	if err != nil {
		return polyloop.RunResult{}, polyloop.RunDiff{}, err
	}
	runner.Model = client
	snap, hash := src.Snapshot()
	res, err := runner.RunWith(ctx, newID, agent, snap.Task, polyloop.RunOptions{
		ReplayOf: &polyloop.RunSource{RunID: client.log.RunID, SnapshotHash: hash}})
	if err != nil {
		return res, polyloop.RunDiff{}, err
	}
	replay, err := runner.Store.ReadLog(ctx, res.RunID)
	if err != nil {
		return res, polyloop.RunDiff{}, &polyloop.PersistenceError{Op: "read", RunID: res.RunID, Err: err}
	}
	replay.RunID = res.RunID
	return res, polyloop.DiffRuns(src, replay), nil
}
