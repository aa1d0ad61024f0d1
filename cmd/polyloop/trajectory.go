package main

import (
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
