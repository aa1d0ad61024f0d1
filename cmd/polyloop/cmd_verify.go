package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/polyloop/polyloop"
	"github.com/spf13/cobra"
)

func newVerifyCmd(a *app) *cobra.Command {
	var all, asJSON bool
	c := &cobra.Command{
		Use:   "verify [RUN_ID... | --all]",
		Short: "Check stored logs with the resume planner's structural checks",
		Long: `Check run logs with the resume planner (polyloop.PlanResume): seq gaps, records
after run_finished, steps out of order, results without their intent, records
that break their own invariants, and records that cannot be decoded. Each run
prints "ok" with the plan resume would follow, or CORRUPT with the offending
record (for a record that cannot be decoded: the store's error, which names
its seq). A corrupt run does not stop the others from being checked.

With --json the results are one JSON object: "runs" (each with run_id, ok, and
records and plan, or error and the offending seq and record), "verified" and
"corrupt".

Exit codes: 0 every log is sound; 1 at least one is corrupt; 2 an error (unknown
run, store failure).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return fmt.Errorf("give run ids or --all (not both)")
			}
			return a.verify(cmd.Context(), args, all, asJSON)
		},
	}
	c.Flags().BoolVar(&all, "all", false, "verify every run in the store")
	c.Flags().BoolVar(&asJSON, "json", false, "print the results as one JSON object: runs, verified, corrupt")
	return c
}

func (a *app) verify(ctx context.Context, ids []string, all, asJSON bool) error {
	st, err := a.openRead(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if all {
		if ids, err = allRunIDs(ctx, st); err != nil {
			return err
		}
	}
	rep := verifyReport{Runs: []verifyResult{}}
	for _, id := range ids {
		res, err := verifyRun(ctx, st, id)
		if err != nil {
			return err
		}
		rep.Runs = append(rep.Runs, res)
		rep.Verified++
		if !res.OK {
			rep.Corrupt++
		}
		if !asJSON {
			res.writeText(a.stdout)
		}
	}
	switch {
	case asJSON:
		if err := writeJSON(a.stdout, rep); err != nil {
			return err
		}
	case all:
		fmt.Fprintf(a.stdout, "%d runs verified, %d corrupt\n", rep.Verified, rep.Corrupt)
	}
	if rep.Corrupt > 0 {
		return &exitErr{code: exitStopped}
	}
	return nil
}

// verifyReport is what verify found, as --json prints it.
type verifyReport struct {
	Runs     []verifyResult `json:"runs"`
	Verified int            `json:"verified"`
	Corrupt  int            `json:"corrupt"`
}

// verifyResult is the verification of one run: sound, with the plan resume
// would follow, or corrupt, with why and, when known, the offending record.
type verifyResult struct {
	RunID   string              `json:"run_id"`
	OK      bool                `json:"ok"`
	Records int                 `json:"records,omitempty"`
	Plan    polyloop.PlanAction `json:"plan,omitempty"`
	// Error says why the log is corrupt.
	Error string `json:"error,omitempty"`
	// Seq and Record are the offending record, when the planner names one
	// that decoded.
	Seq    *int64          `json:"seq,omitempty"`
	Record json.RawMessage `json:"record,omitempty"`
}

func (r verifyResult) writeText(w io.Writer) {
	if r.OK {
		fmt.Fprintf(w, "ok %s: %d records, %s\n", r.RunID, r.Records, r.Plan)
		return
	}
	fmt.Fprintf(w, "CORRUPT %s: %s\n", r.RunID, r.Error)
	if r.Seq != nil && r.Record != nil {
		fmt.Fprintf(w, "  record %d: %s\n", *r.Seq, r.Record)
	}
}

// verifyRun checks one log; it reports corruption, and returns an error
// only when the log cannot be checked.
func verifyRun(ctx context.Context, st store, id string) (verifyResult, error) {
	res := verifyResult{RunID: id}
	log, err := st.ReadLog(ctx, id)
	if undecodable(err) {
		res.Error = err.Error()
		return res, nil
	}
	if err != nil {
		return res, err
	}
	if log.Empty() {
		return res, notFound(st, id)
	}
	log.RunID = id
	plan, err := polyloop.PlanResume(log)
	var ce *polyloop.CorruptLogError
	if errors.As(err, &ce) {
		res.Error = err.Error()
		if ce.Seq >= 0 && ce.Seq < int64(len(log.Records)) {
			if rec, err := log.Records[ce.Seq].MarshalJSON(); err == nil {
				seq := ce.Seq
				res.Seq, res.Record = &seq, rec
			}
		}
		return res, nil
	}
	if err != nil {
		return res, err
	}
	res.OK, res.Records, res.Plan = true, len(log.Records), plan.Action
	return res, nil
}

// undecodable reports whether a ReadLog error says a stored record could not
// be decoded (the log is corrupt) rather than that the store failed: a
// corrupt-log mark, or the JSON decoder's syntax and type errors.
func undecodable(err error) bool {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.Is(err, polyloop.ErrCorruptLog) || errors.As(err, &syntax) || errors.As(err, &typ)
}
