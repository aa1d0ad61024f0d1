package main

import (
	"context"
	"fmt"

	"github.com/polyloop/polyloop"
	"github.com/spf13/cobra"
)

func newExportCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "export RUN_ID...",
		Short: "Print runs' records as JSON lines (the documented log format)",
		Long: `Print the records of the given runs as JSON lines, one record per line, in the
log format documented in docs/log-format.md, run after run.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.export(cmd.Context(), args)
		},
	}
}

func (a *app) export(ctx context.Context, ids []string) error {
	st, err := openStore(ctx, a.store, existingStore)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, id := range ids {
		log, err := st.ReadLog(ctx, id)
		if err != nil {
			return err
		}
		if log.Empty() {
			return fmt.Errorf("%w: %q", polyloop.ErrRunNotFound, id)
		}
		b, err := polyloop.EncodeRecords(log.Records)
		if err != nil {
			return fmt.Errorf("run %s: %w", id, err)
		}
		if _, err := a.stdout.Write(b); err != nil {
			return err
		}
	}
	return nil
}
