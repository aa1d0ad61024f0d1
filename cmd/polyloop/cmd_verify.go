package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/sqlitestore"
	"github.com/spf13/cobra"
)

func newVerifyCmd(a *app) *cobra.Command {
	var all bool
	c := &cobra.Command{
		Use:   "verify [RUN_ID... | --all]",
		Short: "Check stored logs: checksums, decoding and the resume planner's structural checks",
		Long: `Check run logs record by record: each record's checksum (CRC-32C, kept by the
stores since schema 2 of SQLite and 3 of PostgreSQL; older records have none and
are counted, not checked), its decoding, seq gaps; then the resume planner's
structural checks (polyloop.PlanResume): records after run_finished, steps out
of order, results without their intent, records that break their own
invariants. Each run prints "ok" with the plan resume would follow, CORRUPT
with the run and the seq of the offending record, or UNSUPPORTED for a log
that a newer polyloop wrote (a greater major version of the log format). A
corrupt or unsupported run does not stop the others from being checked; a
summary follows. A SQLite file that SQLite finds damaged (cut short, a
malformed page) is reported CORRUPT as a whole, and every run is then checked
as far as the file can be read, without writing to it.

Exit codes: 0 every log is sound; 1 at least one is corrupt or unsupported (or
the store file is damaged); 2 an error (unknown run, store failure).`,
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

// logSource is what verify reads logs from: a store, or a damaged SQLite
// file opened for salvage.
type logSource interface {
	ReadLog(ctx context.Context, runID string) (polyloop.RunLog, error)
}

// uncheckedCounter is a store that tells how many of a run's records have
// no checksum (sqlitestore, pgstore).
type uncheckedCounter interface {
	RecordsWithoutChecksum(ctx context.Context, runID string) (int64, error)
}

func (a *app) verify(ctx context.Context, ids []string, all bool) error {
	st, err := openStore(ctx, a.store, existingStore)
	if errors.Is(err, sqlitestore.ErrDamaged) {
		return a.verifyDamaged(ctx, err, ids, all)
	}
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
	v := verifier{a: a, src: st}
	return v.check(ctx, ids)
}

// verifyDamaged reports a SQLite file SQLite finds damaged, then checks
// every run as far as the file can be read, read-only.
func (a *app) verifyDamaged(ctx context.Context, openErr error, ids []string, all bool) error {
	fmt.Fprintf(a.stdout, "CORRUPT store: %v\n", openErr)
	sv, err := sqlitestore.OpenSalvage(strings.TrimPrefix(a.store, "sqlite:"))
	if err != nil {
		return err
	}
	defer sv.Close()
	if all {
		found, err := sv.RunIDs(ctx)
		if err != nil {
			fmt.Fprintf(a.stdout, "  listing the runs stopped at the damage, %d found before it: %v\n", len(found), err)
		}
		ids = found
	}
	v := verifier{a: a, src: sv, damaged: true}
	return v.check(ctx, ids)
}

// verifier checks runs one after the other and keeps the tally.
type verifier struct {
	a       *app
	src     logSource
	damaged bool // the store as a whole is damaged: the exit code says so
	ok      int
	corrupt int
	newer   int
	// unchecked counts the records without a checksum, in all runs.
	unchecked int64
}

// check verifies each run, prints the summary and returns the exit.
func (v *verifier) check(ctx context.Context, ids []string) error {
	for _, id := range ids {
		if err := v.run(ctx, id); err != nil {
			return err
		}
	}
	fmt.Fprintf(v.a.stdout, "%s verified: %d ok, %d corrupt, %d unsupported", plural(len(ids), "run"), v.ok, v.corrupt, v.newer)
	if v.unchecked > 0 {
		fmt.Fprintf(v.a.stdout, "; %s without a checksum (not checked)", plural(int(v.unchecked), "record"))
	}
	fmt.Fprintln(v.a.stdout)
	if v.damaged || v.corrupt > 0 || v.newer > 0 {
		return &exitErr{code: exitStopped}
	}
	return nil
}

// run checks one log; it returns an error only when the log cannot be
// checked (an unknown run, a store failure).
func (v *verifier) run(ctx context.Context, id string) error {
	out := v.a.stdout
	log, err := v.src.ReadLog(ctx, id)
	switch {
	case errors.Is(err, polyloop.ErrLogVersion):
		fmt.Fprintf(out, "UNSUPPORTED %s: %v (written by a newer polyloop: upgrade to check it)\n", id, err)
		v.newer++
		return nil
	case undecodable(err):
		fmt.Fprintf(out, "CORRUPT %s: %v\n", id, err)
		v.corrupt++
		return nil
	case err != nil:
		return err
	case log.Empty():
		return fmt.Errorf("%w: %q", polyloop.ErrRunNotFound, id)
	}
	log.RunID = id
	plan, err := polyloop.PlanResume(log)
	var ce *polyloop.CorruptLogError
	if errors.As(err, &ce) {
		fmt.Fprintf(out, "CORRUPT %s: %v\n", id, err)
		if ce.Seq >= 0 && ce.Seq < int64(len(log.Records)) {
			if rec, err := log.Records[ce.Seq].MarshalJSON(); err == nil {
				fmt.Fprintf(out, "  record %d: %s\n", ce.Seq, rec)
			}
		}
		v.corrupt++
		return nil
	}
	if err != nil {
		return err
	}
	unchecked, err := v.uncheckedOf(ctx, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "ok %s: %d records, %s", id, len(log.Records), plan.Action)
	if unchecked > 0 {
		fmt.Fprintf(out, " (%d without a checksum, not checked)", unchecked)
	}
	fmt.Fprintln(out)
	v.ok++
	return nil
}

// uncheckedOf counts the run's records without a checksum, when the store
// can tell.
func (v *verifier) uncheckedOf(ctx context.Context, id string) (int64, error) {
	c, ok := v.src.(uncheckedCounter)
	if !ok {
		return 0, nil
	}
	n, err := c.RecordsWithoutChecksum(ctx, id)
	v.unchecked += n
	return n, err
}

// plural is "1 run", "2 runs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// undecodable reports whether a ReadLog error says a stored record could not
// be decoded (the log is corrupt) rather than that the store failed: a
// corrupt-log mark, or the JSON decoder's syntax and type errors.
func undecodable(err error) bool {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.Is(err, polyloop.ErrCorruptLog) || errors.As(err, &syntax) || errors.As(err, &typ)
}
