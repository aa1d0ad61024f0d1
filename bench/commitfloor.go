package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// commitFloorTrips is how many commits one repetition of the PostgreSQL
// floor takes.
const commitFloorTrips = 200

// pgCommitMicros is the median time of one autocommitted INSERT of a tiny
// row (one round trip, one durable commit) on a fresh table of a fresh
// schema: the floor under one durable Append on that server.
func pgCommitMicros(ctx context.Context, loc storeLoc) (us float64, err error) {
	defer func() { err = errors.Join(err, loc.remove(context.WithoutCancel(ctx))) }()
	err = withPG(ctx, loc.DSN, func(c *pgx.Conn) error {
		schema := pgx.Identifier{loc.Schema}.Sanitize()
		if _, err := c.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
			return err
		}
		table := schema + ".floor"
		if _, err := c.Exec(ctx, "CREATE TABLE "+table+" (id bigint PRIMARY KEY, b bytea NOT NULL)"); err != nil {
			return err
		}
		insert := "INSERT INTO " + table + " (id, b) VALUES ($1, $2)"
		tiny := []byte("x")
		if _, err := c.Exec(ctx, insert, -1, tiny); err != nil { // prepares the statement
			return err
		}
		ds := make([]time.Duration, 0, commitFloorTrips)
		for i := range commitFloorTrips {
			t0 := time.Now()
			if _, err := c.Exec(ctx, insert, i, tiny); err != nil {
				return err
			}
			ds = append(ds, time.Since(t0))
		}
		slices.Sort(ds)
		us = float64(ds[len(ds)/2].Nanoseconds()) / 1e3
		return nil
	})
	return us, err
}

// measureCommitFloor gives the commit round trip of a PostgreSQL server:
// measurement 2 cannot go below two of these per step.
func measureCommitFloor(ctx context.Context, o Options, spec storeSpec, name, dir string) (Figure, error) {
	var xs []float64
	for range o.Reps {
		us, err := pgCommitMicros(ctx, spec.newLoc(dir, 0))
		if err != nil {
			return Figure{}, fmt.Errorf("bench: %s commit round trip: %w", name, err)
		}
		xs = append(xs, us)
	}
	f := Figure{Measure: 2, Store: name, Runs: 1}.
		named("commit_round_trip", "commit round trip: autocommitted tiny INSERT (floor of one commit)", "µs").summarize(xs)
	o.progress("%s: commit round trip (autocommitted tiny INSERT): %.0f µs (median of medians)", name, f.Median)
	return f, nil
}
