package view

import (
	"context"

	"github.com/polyloop/polyloop"
	sweeps "github.com/polyloop/polyloop/sweep"
)

// Sweeps is what the view needs from the sweep package to show sweeps:
// the sweep, task and score columns of the runs list, the sweeps page, and
// per-sweep statistics with accuracy. The view calls it only with the
// runs of one page (Annotate) or of one sweep (Runs); an implementation
// must not need to read logs.
type Sweeps interface {
	// List returns the sweeps, newest first.
	List(ctx context.Context) ([]Sweep, error)
	// Annotate returns what the sweeps know of the given runs, by run id;
	// a run that belongs to no sweep is absent.
	Annotate(ctx context.Context, runIDs []string) (map[string]Annotation, error)
	// Runs returns the summaries of a sweep's runs (every attempt), in the
	// listing order, with Totals set for unfinished runs too, and their
	// annotations.
	Runs(ctx context.Context, sweep string) ([]polyloop.RunSummary, map[string]Annotation, error)
	// Stats returns a sweep's statistics as polyloop stats --sweep
	// computes them (sweep.ComputeStats), and Samples its samples table as
	// polyloop samples reads it (sweep.ReadSamples): the sweep page shows
	// the same numbers. Both return an error wrapping ledger.ErrNotFound
	// for an unknown sweep.
	Stats(ctx context.Context, sweep string, opts sweeps.StatsOptions) (*sweeps.Stats, error)
	Samples(ctx context.Context, sweep string, q sweeps.SampleQuery) (*sweeps.Samples, error)
}

// Sweep is one sweep as the sweeps page lists it.
type Sweep struct {
	Name string
	// Runs counts the sweep's runs (attempts included); Tasks, Agents and
	// Epochs its dimensions.
	Runs, Tasks, Agents, Epochs int
}

// Annotation is what a sweep knows of one run.
type Annotation struct {
	Sweep string
	// Task is the task's id in the sweep's task file; Epoch counts from 1;
	// Attempt counts the retries of the task's epoch (1 for the first run).
	Task    string
	Epoch   int
	Attempt int
	// Scores are the run's scores, one per scorer.
	Scores []Score
}

// Score is one scorer's score of a run.
type Score struct {
	Scorer string
	// Value is the score, 0 to 1 for accuracy (1 correct).
	Value float64
	// Explanation says why (the scorer's words); GraderRunID names the run
	// that graded the answer, for a model-graded scorer.
	Explanation string
	GraderRunID string
}
