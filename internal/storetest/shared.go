package storetest

import (
	"context"
	"reflect"
	"testing"

	"github.com/polyloop/polyloop"
)

// SnapshotsOnce checks that a polyloop.SnapshotKeeper keeps each
// configuration snapshot once (design record 0045): three runs of one
// agent and one of another, on tasks of their own, leave two snapshots in
// the store (count says how many it holds); each run reads back whole, its
// own task in its snapshot; and a run written whole (through a wrapper
// that does not share, as a store kept them before) reads back too.
func SnapshotsOnce(t *testing.T, s polyloop.Store, count func(t *testing.T) int) {
	t.Helper()
	ctx := context.Background()
	if _, ok := s.(polyloop.SnapshotKeeper); !ok {
		t.Fatalf("%T does not implement polyloop.SnapshotKeeper", s)
	}
	runs := map[string]string{"shared-1": "alpha", "shared-2": "alpha", "shared-3": "alpha", "shared-4": "beta", "whole": "alpha"}
	want := map[string][]polyloop.Record{}
	for id, agent := range runs {
		recs := []polyloop.Record{Started(id, agent), Intent(1, 1)}
		var dst polyloop.Store = s
		if id == "whole" {
			dst = struct{ polyloop.Store }{s}
		}
		if err := polyloop.AppendRecords(ctx, dst, id, recs...); err != nil {
			t.Fatal(err)
		}
		want[id] = recs
	}
	if n := count(t); n != 2 {
		t.Errorf("%d snapshots stored for runs of 2 agents, want 2", n)
	}
	for id, recs := range want {
		rows, err := s.ReadRows(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if shared := rows[0].Shared != nil; shared != (id != "whole") {
			t.Errorf("run %s: run_started row shared = %v", id, shared)
		}
		log, err := polyloop.ReadLog(ctx, s, id)
		if err != nil {
			t.Fatalf("run %s: %v", id, err)
		}
		if len(log.Records) != len(recs) {
			t.Fatalf("run %s: %d records, want %d", id, len(log.Records), len(recs))
		}
		got, wantStart := log.Records[0].Body.(*polyloop.RunStarted), recs[0].Body.(*polyloop.RunStarted)
		if !reflect.DeepEqual(got, wantStart) {
			t.Errorf("run %s reads back with run_started\n%+v\nwant\n%+v", id, got, wantStart)
		}
	}
}
