package memory_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/polyloop/polyloop/memory"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/sqlitestore"
)

// BenchmarkApply measures Memory.Apply of one put from the live basis: the
// entity's own cost over the in-memory store, and a durable commit on
// SQLite (synchronous=FULL: one sync per commit).
func BenchmarkApply(b *testing.B) {
	sq, err := sqlitestore.Open(filepath.Join(b.TempDir(), "m.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer sq.Close()
	for _, tc := range []struct {
		name  string
		store memory.Store
	}{{"memstore", memstore.New()}, {"sqlite", sq}} {
		b.Run(tc.name, func(b *testing.B) {
			m, err := memory.New(tc.store, memory.Options{Namespaces: []string{"notes"}})
			if err != nil {
				b.Fatal(err)
			}
			version := int64(0)
			for i := 0; b.Loop(); i++ {
				w := memory.Write{ID: fmt.Sprintf("%s-%d", tc.name, i), Basis: memory.Basis{{Namespace: "notes", Key: "k", Version: version}},
					Ops: []memory.Op{{Kind: memory.OpPut, Namespace: "notes", Key: "k", Value: json.RawMessage(`{"n":1}`)}}}
				c, err := m.Apply(bg, w)
				if err != nil {
					b.Fatal(err)
				}
				version = c.Entries[0].Version
			}
		})
	}
}
