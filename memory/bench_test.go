package memory_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/polyloop/polyloop/memory"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/pgstore"
	"github.com/polyloop/polyloop/sqlitestore"
)

var benchRuns atomic.Int64

// BenchmarkApply measures Memory.Apply of one put from the live basis: the
// entity's own cost over the in-memory store, and a durable commit on
// SQLite (synchronous=FULL: one sync per commit).
func BenchmarkApply(b *testing.B) {
	sq, err := sqlitestore.Open(filepath.Join(b.TempDir(), "m.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer sq.Close()
	cases := []struct {
		name  string
		store memory.Store
	}{{"memstore", memstore.New()}, {"sqlite", sq}}
	if dsn := os.Getenv("POLYLOOP_TEST_POSTGRES"); dsn != "" {
		var suffix [6]byte
		_, _ = rand.Read(suffix[:])
		schema := "plb_" + hex.EncodeToString(suffix[:])
		pg, err := pgstore.Open(context.Background(), dsn, &pgstore.Options{Schema: schema})
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			pg.Close()
			if conn, err := pgx.Connect(context.Background(), dsn); err == nil {
				_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
				conn.Close(context.Background())
			}
		}()
		cases = append(cases, struct {
			name  string
			store memory.Store
		}{"postgres", pg})
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			m, err := memory.New(tc.store, memory.Options{Namespaces: []string{"notes"}})
			if err != nil {
				b.Fatal(err)
			}
			id := memory.EntryID{Namespace: "notes", Key: "k"}
			basis, err := m.Basis(bg, id)
			if err != nil {
				b.Fatal(err)
			}
			run := benchRuns.Add(1) // write ids are new in every run of the benchmark
			for i := 0; b.Loop(); i++ {
				w := memory.Write{ID: fmt.Sprintf("%s-%d-%d", tc.name, run, i), Basis: basis,
					Ops: []memory.Op{{Kind: memory.OpPut, Namespace: "notes", Key: "k", Value: json.RawMessage(`{"n":1}`)}}}
				c, err := m.Apply(bg, w)
				if err != nil || c.Replayed {
					b.Fatal(c, err)
				}
				basis[0].Version = c.Entries[0].Version
			}
		})
	}
}
