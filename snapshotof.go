package polyloop

import (
	"context"
	"fmt"
)

// SnapshotOf returns the snapshot that a run of agent on task started by
// this Runner would record, and its hash: the agent's tools resolved from
// the executor as Run resolves them, the seams described, the defaults
// filled in. It reads and writes nothing and calls no seam besides the
// executor's ToolSpecs and the seams' Describe (the environment provider's
// Describe too, for an agent with an environment).
//
// The hash of SnapshotOf(agent, Task{}) identifies an agent's configuration
// apart from any task: two runs of the same agent on different tasks differ
// in their snapshots only by their task. Errors: ErrInvalidConfig for an
// agent Run would refuse for its name or tools.
func (r *Runner) SnapshotOf(agent Agent, task Task) (Snapshot, string, error) {
	agent, err := r.resolveAgent(agent) // tools.go
	if err != nil {
		return Snapshot{}, "", err
	}
	if agent, err = r.describeEnv(context.Background(), agent); err != nil {
		return Snapshot{}, "", err
	}
	snap := r.snapshot(agent, task)
	hash, err := snap.Hash()
	if err != nil {
		return Snapshot{}, "", fmt.Errorf("%w: snapshot: %v", ErrInvalidConfig, err)
	}
	return snap, hash, nil
}
