package main

import (
	"context"
	"os"
	"testing"

	"github.com/polyloop/polyloop/bench"
)

// Every runtime runs W on every store it keeps a run in (PostgreSQL when
// POLYLOOP_TEST_POSTGRES names a database), checks that the run did what W
// says, and measures it; the place is removed afterwards.
func TestRuntimes(t *testing.T) {
	stores := map[string]string{kindMemory: kindMemory, kindSQLite: kindSQLite, kindPostgres: os.Getenv("POLYLOOP_TEST_POSTGRES")}
	for name, def := range runtimes {
		for _, kind := range def.stores {
			t.Run(name+"/"+kind, func(t *testing.T) {
				if stores[kind] == "" {
					t.Skip("POLYLOOP_TEST_POSTGRES is not set")
				}
				ctx := context.Background()
				p, err := newPlace(ctx, stores[kind])
				if err != nil {
					t.Fatal(err)
				}
				res, err := measure(ctx, name, def, bench.Workload{Steps: 5}, p)
				if err != nil {
					t.Fatal(err)
				}
				if res.Runtime != name || res.Store != kind || res.Steps != 5 || res.WallNS <= 0 || res.Mallocs == 0 || res.Version == "unknown" {
					t.Errorf("measurement %+v", res)
				}
				if durable := kind != kindMemory; durable != (res.StoredBytes > 0) {
					t.Errorf("%s keeps %d bytes in %s", name, res.StoredBytes, kind)
				}
				if kind == kindSQLite {
					if _, err := os.Stat(p.dir); !os.IsNotExist(err) {
						t.Errorf("the SQLite place %s is still there: %v", p.dir, err)
					}
				}
			})
		}
	}
}

// A runtime is refused a store it does not keep runs in, and an unknown
// runtime is refused.
func TestRefused(t *testing.T) {
	if err := run("eino", kindSQLite, 3, false); err == nil {
		t.Error("eino on SQLite: no error")
	}
	if err := run("nope", kindMemory, 3, false); err == nil {
		t.Error("an unknown runtime: no error")
	}
}
