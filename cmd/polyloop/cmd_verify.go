package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/polyloop/polyloop"
	"github.com/spf13/cobra"
)

func newVerifyCmd(a *app) *cobra.Command {
	var all bool
	c := &cobra.Command{
		Use:   "verify [RUN_ID... | --all]",
		Short: "Check stored logs with the resume planner's structural checks",
		Long: `Check run logs with the resume planner (polyloop.PlanResume): seq gaps, records
after run_finished, steps out of order, results without their intent, records
that break their own invariants, and records that cannot be decoded. Each run
prints "ok" with the plan resume would follow, or CORRUPT with the offending
record (for a record that cannot be decoded: the store's error, which names
its seq). A corrupt run does not stop the others from being checked.

Exit codes: 0 every log is sound; 1 at least one is corrupt; 2 an error (unknown
run, store failure).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return fmt.Errorf("give run ids or --all (not both)")
			}
			return a.verify(cmd.Context(), args, all)
		},
	}
	c.Flags().BoolVar(&all, "all", false, "verify every run in the store")
	return c
}

func (a *app) verify(ctx context.Context, ids []string, all bool) error {
	st, err := openStore(ctx, a.store, existingStore)
	if err != nil {
		return err
	}
	defer st.Close()
	if all {
		runs, err := st.ListRuns(ctx, polyloop.RunFilter{})
		if err != nil {
			return err
		}
		for _, r := range runs {
			ids = append(ids, r.RunID)
		}
	}
	corrupt := 0
	for _, id := range ids {
		bad, err := a.verifyRun(ctx, st, id)
		if err != nil {
			return err
		}
		if bad {
			corrupt++
		}
	}
	if all {
		fmt.Fprintf(a.stdout, "%d runs verified, %d corrupt\n", len(ids), corrupt)
	}
	if corrupt > 0 {
		return &exitErr{code: exitStopped}
	}
	return nil
}

// verifyRun checks one log; it reports corruption, and returns an error
// only when the log cannot be checked.
func (a *app) verifyRun(ctx context.Context, st store, id string) (bool, error) {
	log, err := st.ReadLog(ctx, id)
	if undecodable(err) {
		fmt.Fprintf(a.stdout, "CORRUPT %s: %v\n", id, err)
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if log.Empty() {
		return false, fmt.Errorf("%w: %q", polyloop.ErrRunNotFound, id)
	}
	log.RunID = id
	plan, err := polyloop.PlanResume(log)
	var ce *polyloop.CorruptLogError
	if errors.As(err, &ce) {
		fmt.Fprintf(a.stdout, "CORRUPT %s: %v\n", id, err)
		if ce.Seq >= 0 && ce.Seq < int64(len(log.Records)) {
			if rec, err := log.Records[ce.Seq].MarshalJSON(); err == nil {
				fmt.Fprintf(a.stdout, "  record %d: %s\n", ce.Seq, rec)
			}
		}
		return true, nil
	}
	if err != nil {
		return false, err
	}
	fmt.Fprintf(a.stdout, "ok %s: %d records, %s\n", id, len(log.Records), plan.Action)
	return false, nil
}

// undecodable reports whether a ReadLog error says a stored record could not
// be decoded (the log is corrupt) rather than that the store failed: a
// corrupt-log mark, or the JSON decoder's syntax and type errors.
func undecodable(err error) bool {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.Is(err, polyloop.ErrCorruptLog) || errors.As(err, &syntax) || errors.As(err, &typ)
}
