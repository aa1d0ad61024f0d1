// Package sweep runs many tasks × epochs × agents, scored, resumable, with
// statistics: a sweep. docs/sweeps.md describes it for users; this is its
// shape for programs.
//
// A Definition names the agents (each an Agent: a polyloop.Agent and its
// seams), a TaskSource (TaskFile reads JSONL and CSV, streamed; TaskList
// holds tasks in memory), the epochs, a RetryPolicy, Scorers, the
// concurrency and the limits of model calls (Providers, RateLimit). New
// checks it and hashes each agent by the snapshot its runs record for an
// empty task (polyloop.Runner.SnapshotOf).
//
// Every run of a sweep has an id derived from the sweep's name, the
// agent's hash, the task's id, the epoch and the attempt (RunID, CoordID,
// ParseRunID), and an entry in the store's sweep ledger (package
// sweep/ledger) that ties it to them and to the attempt it retries. So
// Sweep.Run, run again after a crash or a stop, skips what finished,
// resumes what did not (polyloop.Runner.Resume, under the run's lease),
// starts what is missing, retries as new attempts the runs whose stop
// reason the policy names, and scores what finished unscored. The store
// must keep the ledger (Store): memstore, sqlitestore and pgstore do.
//
// For a job queue the sweep splits in two: Sweep.Pending records the
// entries and yields the runs to do, and Sweep.Execute runs or resumes one
// of them, scores it and returns its next attempt. ComputeStats gives the
// statistics (accuracy clustered by task, pass@k, attempts per outcome,
// every run's usage), and Sweep.Rescore scores finished runs again without
// running them.
//
// Scores are stored beside the runs, keyed by run and scorer, never in a
// run's log. A model-graded scorer's grading call is itself a recorded
// run.
package sweep
