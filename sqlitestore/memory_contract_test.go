package sqlitestore

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memory/memoryport"
	"github.com/polyloop/polyloop/polylooptest"
)

// TestMemoryContract runs the memory ports' conformance kit.
func TestMemoryContract(t *testing.T) {
	open := func(t testing.TB, path string) *Store {
		s, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	var mu sync.Mutex
	paths := map[polylooptest.MemoryStore]string{}
	polylooptest.TestMemoryStore(t, polylooptest.MemoryStoreHarness{
		New: func(t testing.TB) polylooptest.MemoryStore {
			path := filepath.Join(t.TempDir(), "runs.db")
			s := open(t, path)
			mu.Lock()
			paths[s] = path
			mu.Unlock()
			return s
		},
		Reopen: func(t testing.TB, s polylooptest.MemoryStore) polylooptest.MemoryStore {
			s.(*Store).Close()
			mu.Lock()
			defer mu.Unlock()
			return open(t, paths[s])
		},
	})
}

// Memory commits share the run log's write connection: appends and commits
// interleave, and a run's summary cache stays right.
func TestMemoryBesideRuns(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "runs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			run := "run-" + string(rune('a'+i))
			for seq := range int64(10) {
				rec := polyloop.Record{Seq: seq, Body: &polyloop.ModelCallIntent{Step: int(seq) + 1, CallID: "m", Attempt: 1}}
				if seq == 0 {
					rec.Body = &polyloop.RunStarted{RunID: run, SnapshotHash: "sha256:x"}
				}
				if err := polyloop.AppendRecords(ctx, s, run, rec); err != nil {
					errs <- err
				}
			}
		}()
		go func() {
			defer wg.Done()
			for j := range 10 {
				w := memoryport.Write{ID: "w-" + string(rune('a'+i)) + string(rune('0'+j)), Ops: []memoryport.Op{{Kind: memoryport.OpPut,
					Namespace: "ns", Key: "k-" + string(rune('a'+i)) + string(rune('0'+j)), Value: json.RawMessage(`1`)}}}
				if _, err := s.CommitWrite(ctx, w); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	es, err := s.LoadEntries(ctx, []string{"ns"})
	if err != nil || len(es) != 80 {
		t.Fatalf("%d entries, %v", len(es), err)
	}
	runs, err := s.ListRuns(ctx, polyloop.RunFilter{})
	if err != nil || len(runs) != 8 || runs[0].Records != 10 {
		t.Fatalf("runs %+v, %v", runs, err)
	}
}
