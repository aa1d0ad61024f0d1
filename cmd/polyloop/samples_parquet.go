package main

import (
	"fmt"
	"os"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/polyloop/polyloop/sweep"
)

// samplesSchema is the Parquet schema of a samples table: the columns of
// sampleColumns, typed (a score and an explanation are null where a scorer
// has no score, started_at where the run has not started, tokens and
// cost_usd where none of them is known: a sum over the column must not
// count an unknown cost as $0). Parquet orders
// a group's columns by name.
func samplesSchema(scorers []string) *parquet.Schema {
	g := parquet.Group{
		"run_id": parquet.String(), "agent": parquet.String(), "agent_hash": parquet.String(), "snapshot_hash": parquet.String(),
		"task": parquet.String(), "epoch": parquet.Int(64), "attempt": parquet.Int(64), "last": parquet.Leaf(parquet.BooleanType),
		"left_out": parquet.Leaf(parquet.BooleanType), "status": parquet.String(), "stop_reason": parquet.String(),
		"steps": parquet.Int(64), "tokens": parquet.Optional(parquet.Int(64)), "tokens_unknown": parquet.Leaf(parquet.BooleanType),
		"cost_usd": parquet.Optional(parquet.Leaf(parquet.DoubleType)), "cost_unknown": parquet.Leaf(parquet.BooleanType),
		"started_at": parquet.Optional(parquet.Timestamp(parquet.Microsecond)), "duration_s": parquet.Leaf(parquet.DoubleType),
	}
	for _, sc := range scorers {
		g["score_"+sc] = parquet.Optional(parquet.Leaf(parquet.DoubleType))
		g["explanation_"+sc] = parquet.Optional(parquet.String())
		g["error_"+sc] = parquet.Optional(parquet.String())
	}
	return parquet.NewSchema("sample", g)
}

// sampleRow is a sample as a Parquet row of samplesSchema.
func sampleRow(r sweep.Sample, scorers []string) map[string]any {
	row := map[string]any{
		"run_id": r.RunID, "agent": r.Agent, "agent_hash": r.AgentHash, "snapshot_hash": r.SnapshotHash, "task": r.Task,
		"epoch": int64(r.Epoch), "attempt": int64(r.Attempt), "last": r.Last, "left_out": r.LeftOut, "status": r.Status,
		"stop_reason": string(r.StopReason), "steps": int64(r.Steps), "tokens": nil, "tokens_unknown": r.TokensUnknown,
		"cost_usd": nil, "cost_unknown": r.CostUnknown, "started_at": nil, "duration_s": r.Duration.Seconds(),
	}
	if n := r.KnownTokens(); n != nil {
		row["tokens"] = *n
	}
	if c := r.KnownCost(); c != nil {
		row["cost_usd"] = *c
	}
	if !r.StartedAt.IsZero() {
		row["started_at"] = r.StartedAt.UTC().Truncate(time.Microsecond)
	}
	for _, name := range scorers {
		row["score_"+name], row["explanation_"+name], row["error_"+name] = nil, nil, nil
		if sc, ok := r.Scores[name]; ok {
			row["score_"+name], row["explanation_"+name] = sc.Value, sc.Explanation
		}
		if e, ok := r.ScoreErrors[name]; ok {
			row["error_"+name] = e
		}
	}
	return row
}

// writeSamplesParquetFile writes the samples to path, replacing it; a
// failed write leaves no file.
func writeSamplesParquetFile(path string, s *sweep.Samples) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	w := parquet.NewWriter(f, samplesSchema(s.Scorers))
	for _, r := range s.Rows {
		if err := w.Write(sampleRow(r, s.Scorers)); err != nil {
			return fmt.Errorf("--parquet %s: %w", path, err)
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("--parquet %s: %w", path, err)
	}
	return nil
}
