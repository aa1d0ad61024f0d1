package polyloop

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// SharedSnapshot is a run's configuration snapshot without its task, as a
// SnapshotKeeper keeps it: once per store, for every run that refers to it
// (design record 0045). The run_started row of such a run holds the
// reference and the task; the reader (ReadLog) puts the two back together,
// so that what it returns is the record the Runner wrote.
type SharedSnapshot struct {
	// Ref is "sha256:" and the hex SHA-256 of Data: the key a store keeps
	// the snapshot by, and what the run_started row says.
	Ref string
	// Data is the snapshot without its task (Snapshot.Task zero), encoded
	// as the record's "snapshot" field would be.
	Data []byte
}

// SnapshotKeeper is an optional interface of a Store that keeps each
// configuration snapshot once, however many runs refer to it. The Runner
// then writes the run_started row of every run without its snapshot but
// for the task, with a reference (its "v" is 3, docs/log-format.md), and
// sets Row.Shared on that row. A store that does not implement it gets
// every run_started row whole, as before; so does a store behind a wrapper
// that does not pass SharesSnapshots on.
//
// Contract (beside Store's):
//   - Append stores the Shared snapshot of each row that has one in the
//     same atomic, prefix-durable Append as its row: the row is never
//     visible without its snapshot. A store that holds Shared.Ref already
//     keeps what it holds (the bytes are the same: Ref is their hash), so
//     that it keeps each snapshot once.
//   - ReadRows returns each row with the Shared it was appended with: the
//     same Ref, and Data byte for byte (nil on the other rows).
//   - Append MUST NOT retain Shared.Data after it returns (copy it).
//
// polylooptest.TestStore checks it (the SharedSnapshot check) when the
// store implements it.
type SnapshotKeeper interface {
	Store
	// SharesSnapshots marks the interface; it does nothing.
	SharesSnapshots()
}

// sharedRunStarted is the run_started record of a run whose snapshot is
// shared: the snapshot's task and a reference to the rest.
type sharedRunStarted struct {
	RunID          string     `json:"run_id"`
	SnapshotRef    string     `json:"snapshot_ref"`
	Task           Task       `json:"task"`
	SnapshotHash   string     `json:"snapshot_hash"`
	LibraryVersion string     `json:"library_version"`
	LogVersion     string     `json:"log_version,omitempty"`
	Parent         *ParentRef `json:"parent,omitempty"`
	ForkedFrom     *RunSource `json:"forked_from,omitempty"`
	ReplayOf       *RunSource `json:"replay_of,omitempty"`
}

// sharedVersion is the "v" of a run_started row that refers to a shared
// snapshot: a reader that does not know snapshot_ref would misread it.
const sharedVersion = 3

// shareSnapshot returns the shared form of a snapshot: its encoding without
// its task, and the reference.
func shareSnapshot(s Snapshot) (SharedSnapshot, error) {
	s.Task = Task{}
	data, err := marshalNoEscape(s)
	if err != nil {
		return SharedSnapshot{}, err
	}
	return SharedSnapshot{Ref: snapshotRef(data), Data: data}, nil
}

// snapshotRef is the reference of a shared snapshot's bytes.
func snapshotRef(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// appendSharedRunStarted appends the encoding of a run_started record whose
// snapshot is shared as sh.
func appendSharedRunStarted(dst []byte, r Record, b *RunStarted, sh SharedSnapshot) ([]byte, error) {
	w := sharedRunStarted{RunID: b.RunID, SnapshotRef: sh.Ref, Task: b.Snapshot.Task, SnapshotHash: b.SnapshotHash,
		LibraryVersion: b.LibraryVersion, LogVersion: b.LogVersion, Parent: b.Parent, ForkedFrom: b.ForkedFrom, ReplayOf: b.ReplayOf}
	fields, err := marshalNoEscape(w)
	if err != nil {
		return dst, err
	}
	dst = appendEnvelope(dst, r, sharedVersion)
	dst = append(dst, ',')
	dst = append(dst, fields[1:]...)
	return dst, nil
}

// decodeShared decodes a run_started row of version 3: the record with its
// snapshot's task, and the reference of the rest.
func decodeShared(data []byte, env envelope) (Record, string, error) {
	if env.Kind != KindRunStarted {
		return Record{}, "", fmt.Errorf("polyloop: %s record has version %d, which only a run_started that refers to a shared snapshot has", env.Kind, env.V)
	}
	var w sharedRunStarted
	if err := json.Unmarshal(data, &w); err != nil {
		return Record{}, "", fmt.Errorf("polyloop: decoding %s record: %w", env.Kind, err)
	}
	if w.SnapshotRef == "" {
		return Record{}, "", fmt.Errorf("polyloop: run_started record of version %d has no snapshot_ref", env.V)
	}
	b := &RunStarted{RunID: w.RunID, Snapshot: Snapshot{Task: w.Task}, SnapshotHash: w.SnapshotHash,
		LibraryVersion: w.LibraryVersion, LogVersion: w.LogVersion, Parent: w.Parent, ForkedFrom: w.ForkedFrom, ReplayOf: w.ReplayOf}
	return Record{Seq: *env.Seq, At: env.At, Body: b}, w.SnapshotRef, nil
}

// resolveShared puts a shared snapshot's bytes back into the run_started
// record that refers to them, keeping the record's task.
func resolveShared(b *RunStarted, ref string, data []byte) error {
	if got := snapshotRef(data); got != ref {
		return fmt.Errorf("the store's snapshot %s has bytes that hash to %s", ref, got)
	}
	task := b.Snapshot.Task
	var s Snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("shared snapshot %s does not decode: %v", ref, err)
	}
	s.Task = task
	b.Snapshot = s
	return nil
}
