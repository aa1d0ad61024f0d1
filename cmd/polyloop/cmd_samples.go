package main

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/polyloop/polyloop/internal/dsn"
	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/sweep/ledger"
	"github.com/spf13/cobra"
)

type samplesFlags struct {
	sweep     string
	q         sweep.SampleQuery
	below     float64
	json, csv bool
	parquet   string
}

func newSamplesCmd(a *app) *cobra.Command {
	var f samplesFlags
	c := &cobra.Command{
		Use:   "samples --sweep NAME",
		Short: "A sweep's samples: one row per run attempt, with its scores and their explanations",
		Long: `The samples table of a sweep (polyloop sweep): one row per run attempt — its
agent, agent configuration hash, task, epoch and attempt; whether it is the
coordinate's last attempt (the outcome the statistics count) and whether the
statistics leave it out (an agent the sweep no longer has); its status and stop
reason; each scorer's score and explanation; its steps, tokens and cost (a
lower bound, flagged, when part of it is unknown); its duration and run id.

--failed keeps the samples that failed: finished with another stop reason than
completed, or scored below 1 by the scorer (--scorer, default the sweep's
first). --scorer S --below X keeps those S scored below X; --task and --agent
keep one task or agent. --sort orders by run (agent, task, epoch, attempt: the
default), score, task, agent, epoch, steps, tokens, cost or duration; --desc
reverses it.

--json prints the table as one JSON object; --csv one row per sample, a score
and an explanation column per scorer (score_NAME, explanation_NAME), numbers
at full precision; --parquet FILE writes the same columns to a Parquet file,
which pandas.read_parquet or polars.read_parquet load in one line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("below") {
				f.q.Below = &f.below
			}
			return a.samples(cmd.Context(), &f)
		},
	}
	c.Flags().StringVar(&f.sweep, "sweep", "", "the sweep (required)")
	c.Flags().BoolVar(&f.q.Failed, "failed", false, "only the samples that failed: another stop reason than completed, or a score below 1")
	c.Flags().StringVar(&f.q.Scorer, "scorer", "", "the scorer of --failed, --below and --sort score (default the sweep's first)")
	c.Flags().Float64Var(&f.below, "below", 0, "only the samples the scorer scored below this")
	c.Flags().StringVar(&f.q.Task, "task", "", "only the samples of this task id")
	c.Flags().StringVar(&f.q.Agent, "agent", "", "only the samples of this agent")
	c.Flags().StringVar(&f.q.Sort, "sort", "run", "order by "+strings.Join(sweep.SampleSorts, ", "))
	c.Flags().BoolVar(&f.q.Desc, "desc", false, "reverse the order")
	c.Flags().BoolVar(&f.json, "json", false, "print the table as JSON")
	c.Flags().BoolVar(&f.csv, "csv", false, "print the table as CSV")
	c.Flags().StringVar(&f.parquet, "parquet", "", "write the table to this Parquet file")
	return c
}

func (a *app) samples(ctx context.Context, f *samplesFlags) error {
	if f.sweep == "" {
		return errors.New("--sweep NAME is required")
	}
	if n := sweep.CountTrue(f.json, f.csv, f.parquet != ""); n > 1 {
		return errors.New("--json, --csv and --parquet exclude each other")
	}
	ss, closeStore, err := a.openSweeps(ctx, f.sweep)
	if err != nil {
		return err
	}
	defer closeStore()
	s, err := sweep.ReadSamples(ctx, ss, f.sweep, f.q)
	if err != nil {
		return a.sweepNotFound(f.sweep, err)
	}
	switch {
	case f.json:
		return writeJSON(a.machineOut(), s)
	case f.csv:
		return writeSamplesCSV(a.machineOut(), s)
	case f.parquet != "":
		if err := writeSamplesParquetFile(f.parquet, s); err != nil {
			return err
		}
		fmt.Fprintf(a.stderr, "%d samples written to %s\n", len(s.Rows), f.parquet)
		return nil
	}
	return writeSamplesText(a.stdout, s)
}

// openSweeps opens the store to read a sweep's ledger.
func (a *app) openSweeps(ctx context.Context, name string) (sweep.Store, func(), error) {
	st, err := a.openRead(ctx, readOnlyStore)
	if err != nil {
		return nil, nil, err
	}
	ss, ok := st.(sweep.Store)
	if !ok {
		st.Close()
		return nil, nil, a.sweepNotFound(name, ledger.ErrNotFound)
	}
	return ss, func() { st.Close() }, nil
}

// sweepNotFound says how to get a sweep the store does not have.
func (a *app) sweepNotFound(name string, err error) error {
	if errors.Is(err, ledger.ErrNotFound) {
		return fmt.Errorf("no sweep %q in %s (polyloop sweep SWEEP.yaml records one)", name, dsn.Redact(a.store))
	}
	return err
}

// sampleColumns are the columns of the CSV and Parquet tables, the score
// columns in the middle.
func sampleColumns(scorers []string) []string {
	cols := []string{"run_id", "agent", "agent_hash", "snapshot_hash", "task", "epoch", "attempt", "last", "left_out", "status", "stop_reason"}
	for _, sc := range scorers {
		cols = append(cols, "score_"+sc, "explanation_"+sc, "error_"+sc)
	}
	return append(cols, "steps", "tokens", "tokens_unknown", "cost_usd", "cost_unknown", "started_at", "duration_s")
}

func writeSamplesCSV(w io.Writer, s *sweep.Samples) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(sampleColumns(s.Scorers)); err != nil {
		return err
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, r := range s.Rows {
		row := []string{r.RunID, r.Agent, r.AgentHash, r.SnapshotHash, r.Task, strconv.Itoa(r.Epoch), strconv.Itoa(r.Attempt),
			strconv.FormatBool(r.Last), strconv.FormatBool(r.LeftOut), r.Status, string(r.StopReason)}
		for _, name := range s.Scorers {
			if sc, ok := r.Scores[name]; ok {
				row = append(row, num(sc.Value), sc.Explanation)
			} else {
				row = append(row, "", "")
			}
			row = append(row, r.ScoreErrors[name])
		}
		started := ""
		if !r.StartedAt.IsZero() {
			started = r.StartedAt.UTC().Format(time.RFC3339Nano)
		}
		// A cost or token count none of which is known is an empty cell
		// (pandas reads NaN, which its sums skip), never 0.
		tokens, cost := "", ""
		if n := r.KnownTokens(); n != nil {
			tokens = strconv.FormatInt(*n, 10)
		}
		if c := r.KnownCost(); c != nil {
			cost = num(*c)
		}
		row = append(row, strconv.Itoa(r.Steps), tokens, strconv.FormatBool(r.TokensUnknown), cost,
			strconv.FormatBool(r.CostUnknown), started, num(r.Duration.Seconds()))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// writeSamplesText prints the samples as a table, the explanation of the
// scorer of the query last (on one line, cut).
func writeSamplesText(w io.Writer, s *sweep.Samples) error {
	scorer := s.Scorer
	if len(s.Rows) == 0 {
		_, err := fmt.Fprintf(w, "sweep %s: no samples match\n", s.Sweep)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := []string{"AGENT", "TASK", "EPOCH", "ATTEMPT", "STOP"}
	for _, sc := range s.Scorers {
		head = append(head, strings.ToUpper(sc))
	}
	head = append(head, "STEPS", "TOKENS", "COST", "DURATION", "RUN")
	if scorer != "" {
		head = append(head, "WHY ("+strings.ToUpper(scorer)+")")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range s.Rows {
		stop := string(r.StopReason)
		if r.Status != sweep.SampleFinished {
			stop = strings.ReplaceAll(r.Status, "_", " ")
		}
		if !r.Last {
			stop += " (retried)"
		}
		row := []string{r.Agent, r.Task, strconv.Itoa(r.Epoch), strconv.Itoa(r.Attempt), stop}
		for _, name := range s.Scorers {
			cell := "-"
			if sc, ok := r.Scores[name]; ok {
				cell = strconv.FormatFloat(sc.Value, 'g', 4, 64)
			} else if _, failed := r.ScoreErrors[name]; failed {
				cell = "failed"
			}
			row = append(row, cell)
		}
		row = append(row, strconv.Itoa(r.Steps), tokensCell(r.Tokens, r.TokensUnknown), costShort.cost(r.CostUSD, r.CostUnknown),
			r.Duration.Round(time.Millisecond).String(), r.RunID)
		if scorer != "" {
			why := r.Scores[scorer].Explanation
			if e, failed := r.ScoreErrors[scorer]; failed {
				why = "failed: " + e
			}
			row = append(row, oneLine(why, 80))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d samples (--json, --csv or --parquet FILE give every column, explanations whole)\n", len(s.Rows))
	return err
}
