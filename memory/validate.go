package memory

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds of an entry.
const (
	MaxKeyBytes   = 512
	MaxValueBytes = 1 << 20
)

// validName checks a namespace, key or view name: not empty, UTF-8, no
// control characters, at most MaxKeyBytes.
func validName(s string) bool {
	if s == "" || len(s) > MaxKeyBytes || !utf8.ValidString(s) {
		return false
	}
	return strings.IndexFunc(s, unicode.IsControl) < 0
}

// normalize checks a write against the namespaces a Memory serves and puts
// its values in compact form (so that digests and stored bytes do not
// depend on spacing). It returns the write to commit. Without forCommit, a
// delete need not name its version in the basis (the write is only looked
// up by its id and digest).
func normalize(w Write, served []string, forCommit bool) (Write, error) {
	if !validName(w.ID) {
		return w, invalid(w.ID, "the write id must be a non-empty name")
	}
	seen := map[EntryID]bool{}
	for _, e := range w.Basis {
		if err := checkID(w.ID, e.ID(), served); err != nil {
			return w, err
		}
		if e.Version < 0 || seen[e.ID()] {
			return w, invalid(w.ID, "basis line %s: a version ≥ 0, once per entry", e.ID())
		}
		seen[e.ID()] = true
	}
	ops := make([]Op, len(w.Ops))
	touched := map[EntryID]bool{}
	for i, op := range w.Ops {
		if err := checkID(w.ID, op.ID(), served); err != nil {
			return w, err
		}
		if touched[op.ID()] {
			return w, invalid(w.ID, "%s is touched twice", op.ID())
		}
		touched[op.ID()] = true
		var err error
		if op, err = normalizeOp(w, op, forCommit); err != nil {
			return w, err
		}
		ops[i] = op
	}
	w.Ops = ops
	w.Basis = slices.Clone(w.Basis)
	w.Provenance.WriteID = w.ID
	return w, nil
}

func normalizeOp(w Write, op Op, forCommit bool) (Op, error) {
	switch op.Kind {
	case OpPut:
		if len(op.Value) > MaxValueBytes {
			return op, invalid(w.ID, "the value of %s has %d bytes, more than %d", op.ID(), len(op.Value), MaxValueBytes)
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, op.Value); err != nil {
			return op, invalid(w.ID, "the value of %s is not JSON: %v", op.ID(), err)
		}
		op.Value = buf.Bytes()
	case OpDelete:
		if len(op.Value) > 0 {
			return op, invalid(w.ID, "a delete of %s carries a value", op.ID())
		}
		if forCommit && w.Basis.Version(op.ID()) < 1 {
			return op, invalid(w.ID, "a delete of %s needs the basis to name its live version", op.ID())
		}
	default:
		return op, invalid(w.ID, "unknown operation %q on %s", op.Kind, op.ID())
	}
	return op, nil
}

func checkID(writeID string, id EntryID, served []string) error {
	if !validName(id.Namespace) || !validName(id.Key) {
		return invalid(writeID, "entry %q: namespace and key must be non-empty names without control characters, at most %d bytes", id, MaxKeyBytes)
	}
	if !slices.Contains(served, id.Namespace) {
		return invalid(writeID, "namespace %q is not one this memory serves (%s)", id.Namespace, strings.Join(served, ", "))
	}
	return nil
}
