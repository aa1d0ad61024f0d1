package main

import (
	"context"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/bench"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/pgstore"
	"github.com/polyloop/polyloop/sqlitestore"
)

// preparePolyLoop is W as polyloop bench runs it (bench.Workload.Runner) on
// the place's store: memstore, sqlitestore or pgstore in the place's
// schema.
func preparePolyLoop(ctx context.Context, w bench.Workload, p *place) (prepared, error) {
	var store polyloop.Store
	closeStore := func() error { return nil }
	switch p.kind {
	case kindMemory:
		store = memstore.New()
	case kindSQLite:
		s, err := sqlitestore.Open(p.path, nil)
		if err != nil {
			return prepared{}, err
		}
		store, closeStore = s, s.Close
	case kindPostgres:
		s, err := pgstore.Open(ctx, p.dsn, &pgstore.Options{Schema: p.schema})
		if err != nil {
			return prepared{}, err
		}
		store, closeStore = s, s.Close
	}
	r := w.Runner(store)
	return prepared{
		run: func(ctx context.Context) error {
			res, err := r.Run(ctx, "w", w.Agent(), w.Task())
			if err != nil {
				return err
			}
			return w.Check(res)
		},
		close: closeStore,
	}, nil
}
