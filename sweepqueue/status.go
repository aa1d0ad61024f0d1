package sweepqueue

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
)

// Status is the queue as people look at it: how deep it is, who runs what,
// and what needs a person.
type Status struct {
	// Schema is the schema of River's tables.
	Schema string `json:"schema"`
	// States counts the sweeps' jobs by River state (available, scheduled,
	// running, retryable, completed, cancelled, discarded...).
	States map[string]int `json:"states"`
	// Workers are the running jobs by worker (River's client id), the
	// workers sorted by id: at most 10 × StatusOptions.Limit jobs, the
	// longest running first; RunningNotListed counts the running jobs left
	// out.
	Workers          []WorkerJobs `json:"workers"`
	RunningNotListed int          `json:"running_not_listed"`
	// Stuck are the running jobs whose execution began longer ago than
	// StatusOptions.StuckAfter: a worker that died, or a step that hangs.
	// River's rescuer makes them retryable. Only listed running jobs are
	// looked at.
	Stuck []Job `json:"stuck"`
	// Retrying are the jobs waiting for a retry after an error; Cancelled
	// the jobs cancelled for a person, and Discarded those that used every
	// attempt: each with its last error, at most StatusOptions.Limit of
	// each, the oldest first (States has their counts).
	Retrying  []Job `json:"retrying"`
	Cancelled []Job `json:"cancelled"`
	Discarded []Job `json:"discarded"`
}

// WorkerJobs are the jobs one worker is running.
type WorkerJobs struct {
	Worker string `json:"worker"`
	Jobs   []Job  `json:"jobs"`
}

// Job is one job of a sweep's run.
type Job struct {
	ID      int64     `json:"id"`
	Sweep   string    `json:"sweep"`
	RunID   string    `json:"run_id"`
	State   string    `json:"state"`
	Attempt int       `json:"attempt"`
	Worker  string    `json:"worker,omitempty"`
	Since   time.Time `json:"since"`
	// Age is how long ago Since was, by the database's clock (a worker's
	// clock may differ).
	Age   time.Duration `json:"age_ns"`
	Error string        `json:"error,omitempty"`
}

// StatusOptions filter Status.
type StatusOptions struct {
	// Sweep, when set, keeps the jobs of that sweep only.
	Sweep string
	// StuckAfter is how long a running job's execution lasts before it is
	// called stuck (default 2m: four default slices).
	StuckAfter time.Duration
	// Limit bounds each list (default 50).
	Limit int
}

// Status reads the queue, in one read-only snapshot: the counts and the
// lists agree.
func (q *Queue) Status(ctx context.Context, opts StatusOptions) (*Status, error) {
	if opts.StuckAfter <= 0 {
		opts.StuckAfter = 2 * time.Minute
	}
	if opts.Limit <= 0 {
		opts.Limit = 50
	}
	tx, err := q.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("sweepqueue: status: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	st := &Status{Schema: q.schema}
	if st.States, err = q.states(ctx, tx, opts); err != nil {
		return nil, err
	}
	running, err := q.jobs(ctx, tx, "running", opts, 10*opts.Limit)
	if err != nil {
		return nil, err
	}
	st.RunningNotListed = max(0, st.States["running"]-len(running))
	byWorker := map[string][]Job{}
	for _, j := range running {
		byWorker[j.Worker] = append(byWorker[j.Worker], j)
		if j.Age > opts.StuckAfter && len(st.Stuck) < opts.Limit {
			st.Stuck = append(st.Stuck, j)
		}
	}
	for id, jobs := range byWorker {
		st.Workers = append(st.Workers, WorkerJobs{Worker: id, Jobs: jobs})
	}
	sort.Slice(st.Workers, func(i, j int) bool { return st.Workers[i].Worker < st.Workers[j].Worker })
	for _, l := range []struct {
		state string
		into  *[]Job
	}{{"retryable", &st.Retrying}, {"cancelled", &st.Cancelled}, {"discarded", &st.Discarded}} {
		if *l.into, err = q.jobs(ctx, tx, l.state, opts, opts.Limit); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// states counts the jobs by state.
func (q *Queue) states(ctx context.Context, tx pgx.Tx, opts StatusOptions) (map[string]int, error) {
	rows, err := tx.Query(ctx, `SELECT state::text, count(*) FROM `+q.table()+` WHERE kind = $1 AND ($2 = '' OR args->>'sweep' = $2) GROUP BY state`, Kind, opts.Sweep)
	if err != nil {
		return nil, fmt.Errorf("sweepqueue: status: %w", err)
	}
	defer rows.Close()
	states := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			return nil, fmt.Errorf("sweepqueue: status: %w", err)
		}
		states[s] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sweepqueue: status: %w", err)
	}
	return states, nil
}

func (q *Queue) table() string { return pgx.Identifier{q.schema, "river_job"}.Sanitize() }

// jobs lists the jobs in a state, the oldest first: since is when the
// running job's execution began, else when the job was finalized or is
// due.
func (q *Queue) jobs(ctx context.Context, tx pgx.Tx, state string, opts StatusOptions, limit int) ([]Job, error) {
	rows, err := tx.Query(ctx, `SELECT id, args->>'sweep', args->>'run_id', attempt,
			coalesce(attempted_by[array_length(attempted_by, 1)], ''),
			CASE WHEN state = 'running' THEN attempted_at ELSE coalesce(finalized_at, scheduled_at) END AS since,
			coalesce(errors[array_length(errors, 1)]->>'error', ''),
			extract(epoch FROM now() - CASE WHEN state = 'running' THEN attempted_at ELSE coalesce(finalized_at, scheduled_at) END)::float8
		FROM `+q.table()+`
		WHERE kind = $1 AND state = $2::`+pgx.Identifier{q.schema, "river_job_state"}.Sanitize()+` AND ($3 = '' OR args->>'sweep' = $3)
		ORDER BY 6, id LIMIT $4`, Kind, state, opts.Sweep, limit)
	if err != nil {
		return nil, fmt.Errorf("sweepqueue: list %s jobs: %w", state, err)
	}
	defer rows.Close()
	var out []Job
	for rows.Next() {
		j := Job{State: state}
		var age float64
		if err := rows.Scan(&j.ID, &j.Sweep, &j.RunID, &j.Attempt, &j.Worker, &j.Since, &j.Error, &age); err != nil {
			return nil, fmt.Errorf("sweepqueue: list %s jobs: %w", state, err)
		}
		j.Age = time.Duration(age * float64(time.Second))
		out = append(out, j)
	}
	return out, rows.Err()
}

// Pending reports whether the sweep has jobs that are not final yet
// (available, scheduled, running, retryable, pending).
func (st *Status) Pending() int {
	n := 0
	for _, s := range liveStates {
		n += st.States[string(s)]
	}
	return n
}
