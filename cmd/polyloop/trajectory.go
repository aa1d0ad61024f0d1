package main

import (
	"context"
	"errors"

	"github.com/polyloop/polyloop"
	traj "github.com/polyloop/polyloop/internal/trajectory"
)

// The trajectory show prints is the shared one (internal/trajectory), which
// polyloop view renders too.
type (
	trajectory = traj.Trajectory
	stepView   = traj.Step
	callView   = traj.Call
	gateView   = traj.Gate
	actionView = traj.Action
	// maintenanceView is a step's maintenance.
	maintenanceView = traj.Maintenance
)

// buildTrajectory folds a log into a trajectory.
func buildTrajectory(log polyloop.RunLog) *trajectory { return traj.Build(log) }

// loadTrajectory reads a run's log and its children (trajectory.Load),
// with the CLI's message for a run the store does not hold.
func loadTrajectory(ctx context.Context, st store, id string) (*trajectory, error) {
	t, err := traj.Load(ctx, st, id)
	if errors.Is(err, polyloop.ErrRunNotFound) {
		return nil, notFound(st, id)
	}
	return t, err
}
