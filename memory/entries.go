package memory

import (
	"slices"
	"strings"
)

func compareIDs(a, b EntryID) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Key, b.Key)
}

// writeIDs are the entries a write names: its basis's, then its
// operations' not listed there.
func writeIDs(w Write) []EntryID {
	ids := make([]EntryID, 0, len(w.Basis)+len(w.Ops))
	for _, e := range w.Basis {
		ids = append(ids, e.ID())
	}
	for _, op := range w.Ops {
		if !slices.Contains(ids, op.ID()) {
			ids = append(ids, op.ID())
		}
	}
	return ids
}

// sortedEntries sorts entries by namespace and key.
func sortedEntries(es []Entry) []Entry {
	slices.SortFunc(es, func(a, b Entry) int { return compareIDs(a.ID(), b.ID()) })
	return es
}

func containsID(ids []EntryID, id EntryID) bool { return slices.Contains(ids, id) }

func sortIDs(ids []EntryID) { slices.SortFunc(ids, compareIDs) }
