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
	var all, asJSON bool
	c := &cobra.Command{
		Use:   "verify [RUN_ID... | --all]",
		Short: "Check stored logs: checksums, decoding and the resume planner's structural checks",
		Long: `Check run logs record by record: each record's checksum (CRC-32C, kept by the
stores since schema 2 of SQLite and 4 of PostgreSQL; older records have none and
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

With --json the results are one JSON object: "runs" (each with run_id and
status ok, corrupt or unsupported; records, plan and unchecked for a sound log;
error and the seq of the offending record for the others, and the record
itself when it decodes), then "verified",
"ok", "corrupt", "unsupported", "unchecked" and "store_damaged".

Exit codes: 0 every log is sound; 1 at least one is corrupt or unsupported (or
the store file is damaged); 2 an error (unknown run, store failure).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return fmt.Errorf("give run ids or --all (not both)")
			}
			return a.verify(cmd.Context(), args, all, asJSON)
		},
	}
	c.Flags().BoolVar(&all, "all", false, "verify every run in the store")
	c.Flags().BoolVar(&asJSON, "json", false, "print the results as one JSON object (see above)")
	return c
}

// logSource is what verify reads logs from (polyloop.ReadLog): a store, or
// a damaged SQLite file opened for salvage.
type logSource = polyloop.RowReader

// uncheckedCounter is a store that tells how many of a run's records have
// no checksum (sqlitestore, pgstore).
type uncheckedCounter interface {
	RecordsWithoutChecksum(ctx context.Context, runID string) (int64, error)
}

func (a *app) verify(ctx context.Context, ids []string, all, asJSON bool) error {
	st, err := a.openRead(ctx, readOnlyStore)
	if errors.Is(err, sqlitestore.ErrDamaged) {
		return a.verifyDamaged(ctx, err, ids, all, asJSON)
	}
	if err != nil {
		return err
	}
	defer st.Close()
	if all {
		if ids, err = allRunIDs(ctx, st); err != nil {
			return err
		}
	}
	v := verifier{a: a, src: st, json: asJSON}
	return v.check(ctx, ids)
}

// verifyDamaged reports a SQLite file SQLite finds damaged, then checks
// every run as far as the file can be read, read-only.
func (a *app) verifyDamaged(ctx context.Context, openErr error, ids []string, all, asJSON bool) error {
	v := verifier{a: a, json: asJSON, rep: verifyReport{StoreDamaged: true}}
	v.textf("CORRUPT store: %v\n", openErr)
	sv, err := sqlitestore.OpenSalvage(strings.TrimPrefix(a.store, "sqlite:"))
	if err != nil {
		return err
	}
	defer sv.Close()
	if all {
		found, err := sv.RunIDs(ctx)
		if err != nil {
			v.textf("  listing the runs stopped at the damage, %d found before it: %v\n", len(found), err)
		}
		ids = found
	}
	v.src = sv
	return v.check(ctx, ids)
}

// verifier checks runs one after the other and keeps the tally.
type verifier struct {
	a    *app
	src  logSource
	json bool
	rep  verifyReport
}

// verifyReport is what verify found, as --json prints it.
type verifyReport struct {
	Runs        []verifyResult `json:"runs"`
	Verified    int            `json:"verified"`
	OK          int            `json:"ok"`
	Corrupt     int            `json:"corrupt"`
	Unsupported int            `json:"unsupported"`
	// Unchecked counts the records without a checksum, in all runs.
	Unchecked    int64 `json:"unchecked"`
	StoreDamaged bool  `json:"store_damaged,omitempty"`
}

// verifyResult is one run's verdict.
type verifyResult struct {
	RunID     string          `json:"run_id"`
	Status    string          `json:"status"`
	Records   int             `json:"records,omitempty"`
	Plan      string          `json:"plan,omitempty"`
	Unchecked int64           `json:"unchecked,omitempty"`
	Error     string          `json:"error,omitempty"`
	Seq       *int64          `json:"seq,omitempty"`
	Record    json.RawMessage `json:"record,omitempty"`
}

// textf prints a line of the text report (not with --json).
func (v *verifier) textf(format string, args ...any) {
	if !v.json {
		fmt.Fprintf(v.a.stdout, format, args...)
	}
}

// check verifies each run, prints the summary and returns the exit.
func (v *verifier) check(ctx context.Context, ids []string) error {
	v.rep.Runs = []verifyResult{}
	for _, id := range ids {
		if err := v.run(ctx, id); err != nil {
			return err
		}
	}
	r := &v.rep
	r.Verified = len(ids)
	if v.json {
		if err := writeJSON(v.a.machineOut(), r); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(v.a.stdout, "%s verified: %d ok, %d corrupt, %d unsupported", plural(len(ids), "run"), r.OK, r.Corrupt, r.Unsupported)
		if r.Unchecked > 0 {
			fmt.Fprintf(v.a.stdout, "; %s without a checksum (not checked)", plural(int(r.Unchecked), "record"))
		}
		fmt.Fprintln(v.a.stdout)
	}
	if r.StoreDamaged || r.Corrupt > 0 || r.Unsupported > 0 {
		return &exitErr{code: exitStopped}
	}
	return nil
}

// run checks one log; it returns an error only when the log cannot be
// checked (an unknown run, a store failure).
func (v *verifier) run(ctx context.Context, id string) error {
	log, err := polyloop.ReadLog(ctx, v.src, id)
	switch {
	case errors.Is(err, polyloop.ErrLogVersion):
		v.textf("UNSUPPORTED %s: %v (written by a newer polyloop: upgrade to check it)\n", id, err)
		v.rep.Unsupported++
		v.rep.Runs = append(v.rep.Runs, verifyResult{RunID: id, Status: "unsupported", Error: err.Error(), Seq: seqOf(err)})
		return nil
	case undecodable(err):
		v.corruptRun(id, err, nil)
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
		var rec []byte
		if ce.Seq >= 0 && ce.Seq < int64(len(log.Records)) {
			rec, _ = log.Records[ce.Seq].MarshalJSON()
		}
		v.corruptRun(id, err, rec)
		return nil
	}
	if err != nil {
		return err
	}
	unchecked, err := v.uncheckedOf(ctx, id)
	if err != nil {
		return err
	}
	v.textf("ok %s: %d records, %s", id, len(log.Records), plan.Action)
	if unchecked > 0 {
		v.textf(" (%d without a checksum, not checked)", unchecked)
	}
	v.textf("\n")
	v.rep.OK++
	v.rep.Runs = append(v.rep.Runs, verifyResult{RunID: id, Status: "ok", Records: len(log.Records), Plan: string(plan.Action), Unchecked: unchecked})
	return nil
}

// corruptRun reports a corrupt log, with the offending record when it
// decoded.
func (v *verifier) corruptRun(id string, err error, rec []byte) {
	v.textf("CORRUPT %s: %v\n", id, err)
	res := verifyResult{RunID: id, Status: "corrupt", Error: err.Error(), Seq: seqOf(err)}
	if rec != nil {
		v.textf("  record %d: %s\n", *res.Seq, rec)
		res.Record = rec
	}
	v.rep.Corrupt++
	v.rep.Runs = append(v.rep.Runs, res)
}

// seqOf is the seq a corrupt-log or unsupported-record error names, if any.
func seqOf(err error) *int64 {
	var ce *polyloop.CorruptLogError
	if errors.As(err, &ce) && ce.Seq >= 0 {
		return &ce.Seq
	}
	var ve *polyloop.LogVersionError
	if errors.As(err, &ve) {
		return &ve.Seq
	}
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
	v.rep.Unchecked += n
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
