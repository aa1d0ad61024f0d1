package polyloop_test

import (
	"context"
	"errors"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
)

// SnapshotOf gives the snapshot and hash that Run records, without a run.
func TestSnapshotOfMatchesRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := memstore.New()
	r := newRunner(scriptmodel.New(scriptmodel.Reply("done")), store, newTestExec())
	task := polyloop.Task{Input: "go", Meta: map[string]string{"k": "v"}}
	snap, hash, err := r.SnapshotOf(testAgent(), task)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, "r1", testAgent(), task); err != nil {
		t.Fatal(err)
	}
	log, err := polyloop.ReadLog(ctx, store, "r1")
	if err != nil {
		t.Fatal(err)
	}
	started := log.Started()
	if started.SnapshotHash != hash {
		t.Errorf("SnapshotOf hash %s, the run recorded %s", hash, started.SnapshotHash)
	}
	if d := polyloop.DiffSnapshots(started.Snapshot, snap); len(d) > 0 {
		t.Errorf("snapshots differ in %v", d)
	}
	if store.Len() != len(log.Records) {
		t.Errorf("SnapshotOf wrote records")
	}
	otherSnap, other, err := r.SnapshotOf(testAgent(), polyloop.Task{Input: "other"})
	if err != nil || other == hash {
		t.Errorf("another task: hash %s (err %v), want a different hash", other, err)
	}
	// The agent configuration hash leaves the task out: the two tasks'
	// snapshots share it, and it is SnapshotOf's hash of the empty task.
	_, empty, _ := r.SnapshotOf(testAgent(), polyloop.Task{})
	a1, err1 := started.Snapshot.AgentHash()
	a2, err2 := otherSnap.AgentHash()
	if err1 != nil || err2 != nil || a1 != a2 || a1 != empty || a1 == hash {
		t.Errorf("AgentHash: %s, %s (%v, %v); want both %s, unlike the snapshot hash %s", a1, a2, err1, err2, empty, hash)
	}
	bad := testAgent()
	bad.Name = " "
	if _, _, err := r.SnapshotOf(bad, task); !errors.Is(err, polyloop.ErrInvalidConfig) {
		t.Errorf("agent without a name: %v, want ErrInvalidConfig", err)
	}
}
