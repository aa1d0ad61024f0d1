// Package sweepqueue runs a sweep's runs as jobs of a River queue
// (github.com/riverqueue/river) on the PostgreSQL that holds the runs, so
// that worker processes on any number of machines share one sweep.
//
// Enqueue records what the sweep has to do (sweep.Sweep.Pending) and
// inserts one job per run, in bulk, unique by run id over the live job
// states. A Worker takes jobs: each is "run or resume run X of sweep S"
// (sweep.Sweep.Execute) under the run's lease, for a bounded slice of time
// ending at a step boundary; a run that is not finished by then goes back
// to the queue (a snooze) and is continued by whichever worker takes it
// next. Outcomes map onto job states (see Verdict): a finished run
// completes its job with the result as output, resume_state_unknown
// cancels it for a person, a store failure is retried with backoff, a
// seam's error or a panic cancels it after a few attempts, a run leased
// elsewhere and a graceful stop give it back without using an attempt.
//
// River's tables live in their own schema (DefaultSchema), migrated by
// Open under an advisory lock, beside pgstore's. Status reads the queue
// for people: depth, running jobs by worker, stuck and cancelled jobs.
package sweepqueue
