package memoryport

import (
	"encoding/json"
)

// EntryID names an entry: a key in a namespace.
type EntryID struct {
	Namespace string `json:"namespace"`
	Key       string `json:"key"`
}

func (id EntryID) String() string { return id.Namespace + "/" + id.Key }

// Provenance says which write made a version: the run, step and call that
// asked for it (empty outside a run) and the write's id.
type Provenance struct {
	RunID   string `json:"run_id,omitempty"`
	Step    int    `json:"step,omitempty"`
	CallID  string `json:"call_id,omitempty"`
	WriteID string `json:"write_id"`
}

// Entry is one version of an entry. Versions count per entry from 1 and are
// never reused: a delete takes the next version too, as a tombstone
// (Deleted, no value), so an entry's history is complete. A live entry is
// one whose last version is not a tombstone.
type Entry struct {
	Namespace  string          `json:"namespace"`
	Key        string          `json:"key"`
	Version    int64           `json:"version"`
	Value      json.RawMessage `json:"value,omitempty"`
	Deleted    bool            `json:"deleted,omitempty"`
	Provenance Provenance      `json:"provenance"`
}

// ID is the entry's id.
func (e Entry) ID() EntryID { return EntryID{Namespace: e.Namespace, Key: e.Key} }

// Expect is one line of a basis: the version of an entry a proposal was
// made from; 0 means the entry was absent (no live entry).
type Expect struct {
	Namespace string `json:"namespace"`
	Key       string `json:"key"`
	Version   int64  `json:"version"`
}

// ID is the expected entry's id.
func (e Expect) ID() EntryID { return EntryID{Namespace: e.Namespace, Key: e.Key} }

// Basis is the versions a proposal was made from, one line per entry. An
// entry a write touches that its basis does not list is expected absent.
type Basis []Expect

// Version is the version the basis expects of an entry (0: absent).
func (b Basis) Version(id EntryID) int64 {
	for _, e := range b {
		if e.ID() == id {
			return e.Version
		}
	}
	return 0
}

// OpKind is what an operation does to its entry.
type OpKind string

// The operations.
const (
	OpPut    OpKind = "put"
	OpDelete OpKind = "delete"
)

// Op is one operation of a write.
type Op struct {
	Kind      OpKind          `json:"kind"`
	Namespace string          `json:"namespace"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value,omitempty"`
}

// ID is the id of the entry the operation touches.
func (o Op) ID() EntryID { return EntryID{Namespace: o.Namespace, Key: o.Key} }

// Write is a batch of operations, made from a basis, committed all or
// nothing. ID is its idempotency key: derive it from what asked for the
// write (a run, a step, an operation or a call), so that a write issued
// again after a crash finds its own earlier commit.
type Write struct {
	ID         string     `json:"id"`
	Basis      Basis      `json:"basis,omitempty"`
	Ops        []Op       `json:"ops,omitempty"`
	Provenance Provenance `json:"provenance"`
}

// EntryVersion is the version a commit gave an entry.
type EntryVersion struct {
	Namespace string `json:"namespace"`
	Key       string `json:"key"`
	Version   int64  `json:"version"`
	Deleted   bool   `json:"deleted,omitempty"`
}

// ID is the entry's id.
func (v EntryVersion) ID() EntryID { return EntryID{Namespace: v.Namespace, Key: v.Key} }

// Commit is what a committed write made: a version per operation, in the
// write's order. A write with no operations commits nothing (Apply checks
// its basis only) and has no entries.
type Commit struct {
	WriteID string         `json:"write_id"`
	Entries []EntryVersion `json:"entries,omitempty"`
	// Replayed: the write id was already committed and this is that
	// commit's result; nothing was written. It is not recorded.
	Replayed bool `json:"-"`
	// Digest is the committed write's WriteDigest, as the store keeps it
	// (set by LookupWrite and by a replayed CommitWrite). It is not
	// recorded.
	Digest string `json:"-"`
}
