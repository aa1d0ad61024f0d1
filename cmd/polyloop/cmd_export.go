package main

import (
	"context"
	"fmt"

	"github.com/polyloop/polyloop"
	"github.com/spf13/cobra"
)

func newExportCmd(a *app) *cobra.Command {
	var all bool
	c := &cobra.Command{
		Use:   "export [RUN_ID... | --all]",
		Short: "Print runs' records as JSON lines (the documented log format)",
		Long: `Print the records of the given runs, or of every run with --all (oldest first),
as JSON lines, one record per line, in the log format documented in
docs/log-format.md, run after run: each run's records in seq order, starting
with its run_started record (seq 0), which holds the run's id. The text is
never escaped for a terminal (--raw or not): the characters a terminal would
obey are JSON escapes (\u007f, \u0085, \u202e, ...), which decode to the
text as stored.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return fmt.Errorf("give run ids or --all (not both)")
			}
			return a.export(cmd.Context(), args, all)
		},
	}
	c.Flags().BoolVar(&all, "all", false, "export every run in the store")
	return c
}

func (a *app) export(ctx context.Context, ids []string, all bool) error {
	st, err := a.openRead(ctx, readOnlyStore)
	if err != nil {
		return err
	}
	defer st.Close()
	if all {
		if ids, err = allRunIDs(ctx, st); err != nil {
			return err
		}
	}
	for _, id := range ids {
		log, err := readRun(ctx, st, id)
		if err != nil {
			return err
		}
		b, err := polyloop.EncodeRecords(log.Records)
		if err != nil {
			return fmt.Errorf("run %s: %w", id, err)
		}
		if _, err := a.machineOut().Write(jsonControls(b)); err != nil {
			return err
		}
	}
	return nil
}
