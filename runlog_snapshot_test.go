package polyloop

import "testing"

// RunLog.Snapshot is the fold's: in a fork whose copied records hold a
// configuration override, the fork's own snapshot is in force after them,
// not the override's.
func TestRunLogSnapshotOfAFork(t *testing.T) {
	log := parseLogScript(t, "f", []string{"start", "override", "intent 1.1", "result 1.1", "step 1 invalid"})
	log.Records[0].Body = &RunStarted{RunID: "f", Snapshot: Snapshot{Agent: "a", System: "third"}, SnapshotHash: "sha256:third",
		ForkedFrom: &RunSource{RunID: "src", SnapshotHash: "sha256:changed", AtStep: 1, Copied: 4}}
	log.Records[1].Body = &ConfigOverride{PreviousHash: "sha256:first", SnapshotHash: "sha256:changed", Fields: []string{"system"},
		Snapshot: Snapshot{Agent: "a", System: "changed"}}
	if _, err := foldLog(log); err != nil {
		t.Fatal(err)
	}
	snap, hash := log.Snapshot()
	if snap.System != "third" || hash != "sha256:third" {
		t.Fatalf("Snapshot() = %q, %s; want the fork's own, third", snap.System, hash)
	}
	// Before the end of the copies, the override's is in force.
	snap, hash = RunLog{RunID: "f", Records: log.Records[:2]}.Snapshot()
	if snap.System != "changed" || hash != "sha256:changed" {
		t.Fatalf("within the copies: %q, %s; want the override's", snap.System, hash)
	}
}
