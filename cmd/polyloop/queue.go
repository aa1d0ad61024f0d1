package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/agentfile"
	"github.com/polyloop/polyloop/internal/dsn"
	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/sweep/ledger"
	"github.com/polyloop/polyloop/sweepfile"
	"github.com/polyloop/polyloop/sweepqueue"
)

// queueFlag is the help of every --queue flag.
const queueFlag = "a postgres:// DSN: the sweep queue (River, schema " + sweepqueue.DefaultSchema + "); the runs are stored in the same database unless --store names another PostgreSQL store"

// openQueue opens the queue at queueDSN and the store of its runs: the same
// database, unless --store was given (then it must be PostgreSQL too:
// workers on other machines reach it).
func (a *app) openQueue(ctx context.Context, queueDSN string) (*sweepqueue.Queue, sweep.Store, func(), error) {
	if err := checkQueueDSN(queueDSN); err != nil {
		return nil, nil, nil, err
	}
	spec := queueDSN
	if a.storeGiven {
		if !strings.HasPrefix(a.store, "postgres://") && !strings.HasPrefix(a.store, "postgresql://") {
			return nil, nil, nil, fmt.Errorf("--store %s: with --queue the runs must be in PostgreSQL, where every worker reaches them", dsn.Redact(a.store))
		}
		spec = a.store
	}
	st, err := openStore(ctx, spec, createStore)
	if err != nil {
		if !a.storeGiven {
			err = fmt.Errorf("--queue %s: %w", dsn.Redact(queueDSN), err)
		}
		return nil, nil, nil, err
	}
	ss, ok := st.(sweep.Store)
	if !ok {
		st.Close()
		return nil, nil, nil, fmt.Errorf("the store %s keeps no sweeps", dsn.Redact(spec))
	}
	q, err := sweepqueue.Open(ctx, queueDSN, nil)
	if err != nil {
		st.Close()
		return nil, nil, nil, fmt.Errorf("--queue %s: %w", dsn.Redact(queueDSN), err)
	}
	return q, ss, func() { q.Close(); st.Close() }, nil
}

// checkQueueDSN refuses a --queue that is not a PostgreSQL DSN.
func checkQueueDSN(queueDSN string) error {
	if !strings.HasPrefix(queueDSN, "postgres://") && !strings.HasPrefix(queueDSN, "postgresql://") {
		return fmt.Errorf("--queue %q: expected a postgres:// DSN", dsn.Redact(queueDSN))
	}
	return nil
}

// readQueue opens the queue at queueDSN to read it, writing nothing (no
// migration): for polyloop workers.
func readQueue(ctx context.Context, queueDSN string) (*sweepqueue.Queue, error) {
	if err := checkQueueDSN(queueDSN); err != nil {
		return nil, err
	}
	q, err := sweepqueue.OpenExisting(ctx, queueDSN, nil)
	if err != nil {
		return nil, fmt.Errorf("--queue %s: %w", dsn.Redact(queueDSN), err)
	}
	if q == nil {
		return nil, fmt.Errorf("--queue %s: no queue at DSN (no %s schema): run polyloop sweep --queue first", dsn.Redact(queueDSN), sweepqueue.DefaultSchema)
	}
	return q, nil
}

// resolveSweep rebuilds a sweep a job names, for a worker running
// concurrency jobs at once: its manifest in the store's ledger names the
// sweep file (sweepfile.Reload checks that it is still the same sweep).
// close releases what the sweep holds open. A
// store failure is a *polyloop.PersistenceError (the job is retried); any
// other error cancels the job.
// Tests replace it.
var resolveSweep = func(ctx context.Context, store sweep.Store, name string, concurrency int, envs func(string) (polyloop.EnvProvider, error)) (s *sweep.Sweep, close func(), err error) {
	m, err := sweep.ReadManifest(ctx, store, name)
	if errors.Is(err, ledger.ErrNotFound) {
		return nil, nil, fmt.Errorf("sweep %s: %w", name, err)
	}
	if err != nil { // the store failed: the job is retried
		return nil, nil, &polyloop.PersistenceError{Op: "read", Err: fmt.Errorf("the manifest of sweep %s: %w", name, err)}
	}
	l, err := sweepfile.Reload(ctx, m, &sweepfile.Options{Concurrency: concurrency, Agent: &agentfile.Options{Environments: envs}})
	if err != nil {
		return nil, nil, err
	}
	return l.Sweep, func() { l.Close() }, nil
}
