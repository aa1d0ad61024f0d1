package replaymodel

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/polyloop/polyloop"
)

// Replay re-runs the recorded trajectory of src as a new run, newID (empty:
// a new ULID): the model is a Client answering from src's log (with opts),
// everything else is runner's — its parser and executor run for real,
// without spending anything on a model. The new run is linked to src
// (RunStarted.ReplayOf) and runs src's task under agent. It returns the
// replay's result and where it departs from src (polyloop.DiffRuns of the two
// logs): with an unchanged configuration, nowhere; with a new parser or
// executor, the first step whose decision or outcome differs. The link
// names the snapshot fields in which agent changes the recorded run's
// (AgentChanges: the model client, always replaced, left out).
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
	source := &polyloop.RunSource{RunID: client.log.RunID, SnapshotHash: hash}
	if replay, _, err := runner.SnapshotOf(agent, snap.Task); err == nil { // else RunWith refuses the agent
		source.Fields = AgentChanges(snap, replay)
	}
	res, err := runner.RunWith(ctx, newID, agent, snap.Task, polyloop.RunOptions{ReplayOf: source})
	if err != nil {
		return res, polyloop.RunDiff{}, err
	}
	return diffed(ctx, runner.Store, src, res)
}

// AgentChanges lists how a replay's snapshot differs from the recorded
// run's (polyloop.DiffSnapshots) apart from the model client, which a
// replay always replaces: the changes of the agent under test.
func AgentChanges(recorded, replay polyloop.Snapshot) []string {
	var out []string
	for _, f := range polyloop.DiffSnapshots(recorded, replay) {
		if f != "model_client" && !strings.HasPrefix(f, "model_client.") {
			out = append(out, f)
		}
	}
	return out
}

// ErrNotAReplay: the run Resume was asked to continue is not a replay of
// the source it was given.
var ErrNotAReplay = errors.New("replaymodel: not a replay of the source run")

// Resume continues the replay run id of src, one that Replay started and
// that did not finish (stopped at a step boundary, cancelled, crashed): the
// model is a new Client on src (a client keeps no state between calls), the
// rest is runner's, and the run goes on as polyloop.Runner.Resume plans it;
// a finished replay is returned as it stands. It returns the result and
// where the replay departs from src, as Replay does.
//
// opts must be those of the Replay that started id: another Match changes
// the client's Describe, and the snapshot check refuses it
// (*polyloop.SnapshotMismatchError). A run id with no records gives
// polyloop.ErrRunNotFound, and one whose RunStarted.ReplayOf does not name
// src gives ErrNotAReplay; nothing is written to the run then. Other errors
// are Resume's.
func Resume(ctx context.Context, runner polyloop.Runner, src polyloop.RunLog, id string, agent polyloop.Agent, opts Options) (polyloop.RunResult, polyloop.RunDiff, error) {
	client, err := New(src, opts)
	if err != nil {
		return polyloop.RunResult{}, polyloop.RunDiff{}, err
	}
	log, err := polyloop.ReadLog(ctx, runner.Store, id)
	if err != nil {
		return polyloop.RunResult{}, polyloop.RunDiff{}, &polyloop.PersistenceError{Op: "read", RunID: id, Err: err}
	}
	started := log.Started()
	switch {
	case log.Empty():
		return polyloop.RunResult{}, polyloop.RunDiff{}, fmt.Errorf("%w: %q", polyloop.ErrRunNotFound, id)
	case started == nil || started.ReplayOf == nil || started.ReplayOf.RunID != client.log.RunID:
		return polyloop.RunResult{}, polyloop.RunDiff{}, fmt.Errorf("run %q exists and is not a replay of %q: %w", id, client.log.RunID, ErrNotAReplay)
	}
	runner.Model = client
	res, err := runner.Resume(ctx, id, agent)
	if err != nil {
		return res, polyloop.RunDiff{}, err
	}
	return diffed(ctx, runner.Store, src, res)
}

// diffed reads the replay run's log and compares it with src.
func diffed(ctx context.Context, st polyloop.Store, src polyloop.RunLog, res polyloop.RunResult) (polyloop.RunResult, polyloop.RunDiff, error) {
	replay, err := polyloop.ReadLog(ctx, st, res.RunID)
	if err != nil {
		return res, polyloop.RunDiff{}, &polyloop.PersistenceError{Op: "read", RunID: res.RunID, Err: err}
	}
	replay.RunID = res.RunID
	return res, polyloop.DiffRuns(src, replay), nil
}
