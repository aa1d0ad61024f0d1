// Command peers runs workload W (package bench) once, on
// PolyLoop or on another agent runtime — CloudWeGo Eino (its ReAct agent,
// in memory) or DBOS Transact (a durable workflow of steps, on SQLite or
// PostgreSQL) — and prints the measurement as one JSON line
// (bench.PeerResult): the run's wall time, the process's CPU time and
// allocations over it, its peak resident memory, and what its store holds
// after it. Each invocation is one fresh process doing one run, so that
// `polyloop bench --peers` can alternate PolyLoop and a peer run by run and
// give their ratios; docs/performance.md has the method.
//
//	peers -list
//	peers -runtime eino -store memory -steps 1000
//	peers -runtime dbos -store postgres://postgres@127.0.0.1:5432/db?sslmode=disable
//
// It is a module of its own so that the library does not depend on the
// peers.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/polyloop/polyloop/bench"
)

// runtimeDef is one runtime W runs on: its module (for its version), the
// stores it keeps a run in, and how to prepare one run of W on a place.
type runtimeDef struct {
	module  string
	stores  []string
	prepare func(ctx context.Context, w bench.Workload, p *place) (prepared, error)
}

// prepared is a run of W ready to go: its runtime started, its store open.
// run is the measured part; close releases the runtime and the store, so
// that the store's size can be read.
type prepared struct {
	run   func(ctx context.Context) error
	close func() error
}

var runtimes = map[string]runtimeDef{
	"polyloop": {module: "github.com/polyloop/polyloop", stores: []string{kindMemory, kindSQLite, kindPostgres}, prepare: preparePolyLoop},
	"eino":     {module: "github.com/cloudwego/eino", stores: []string{kindMemory}, prepare: prepareEino},
	"dbos":     {module: "github.com/dbos-inc/dbos-transact-golang", stores: []string{kindSQLite, kindPostgres}, prepare: prepareDBOS},
}

func main() {
	name := flag.String("runtime", "", "the runtime: polyloop, eino or dbos")
	store := flag.String("store", kindMemory, "memory, sqlite (a fresh file) or a postgres:// DSN (a fresh schema, dropped after)")
	steps := flag.Int("steps", 1000, "S: the run takes S actions and answers at step S+1")
	list := flag.Bool("list", false, "print the runtimes and their stores as a JSON array")
	flag.Parse()
	if err := run(*name, *store, *steps, *list); err != nil {
		fmt.Fprintf(os.Stderr, "peers: %v\n", err)
		os.Exit(1)
	}
}

func run(name, store string, steps int, list bool) error {
	if list {
		var out []bench.PeerRuntime
		for _, n := range slices.Sorted(maps.Keys(runtimes)) {
			out = append(out, bench.PeerRuntime{Runtime: n, Version: moduleVersion(runtimes[n].module), Stores: runtimes[n].stores})
		}
		return json.NewEncoder(os.Stdout).Encode(out)
	}
	def, ok := runtimes[name]
	if !ok {
		return fmt.Errorf("-runtime %q: want one of %s", name, strings.Join(slices.Sorted(maps.Keys(runtimes)), ", "))
	}
	if steps < 1 {
		return fmt.Errorf("-steps %d: must be positive", steps)
	}
	ctx := context.Background()
	p, err := newPlace(ctx, store)
	if err != nil {
		return err
	}
	if !slices.Contains(def.stores, p.kind) {
		return fmt.Errorf("%s keeps no run in %s (its stores: %s)", name, p.kind, strings.Join(def.stores, ", "))
	}
	res, err := measure(ctx, name, def, bench.Workload{Steps: steps}, p)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}
