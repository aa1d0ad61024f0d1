package polyloop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// RowReader reads a run's rows: the read side of a Store, which a source
// of logs that writes nothing (a damaged file opened for salvage) may
// implement alone.
type RowReader interface {
	ReadRows(ctx context.Context, runID string) ([]Row, error)
}

// ReadLog reads a run's log from a store: its rows (Store.ReadRows), each
// checked and decoded as it is read. A run without rows gives an empty log
// and a nil error. A row that fails — a seq that is not the next one (a
// gap), a checksum that does not match its bytes, bytes that are not UTF-8
// or do not decode, a record that says another seq or kind than its row,
// an action intent referring to a tool call the log before it does not
// have — makes the error a *CorruptLogError naming the run, the seq and the
// kind; a record of a newer major version of the format than this library
// reads is a *LogVersionError (errors.Is ErrLogVersion), which is no
// corruption. The store's own errors are returned as they are. Every reader
// of logs — Resume, Fork, the gate answers, and the CLI's show, view,
// export, verify and replay — reads through it.
func ReadLog(ctx context.Context, src RowReader, runID string) (RunLog, error) {
	rows, err := src.ReadRows(ctx, runID)
	if err != nil {
		return RunLog{RunID: runID}, err
	}
	lr := logReader{runID: runID, records: make([]Record, 0, len(rows))}
	for i := range rows {
		if err := lr.add(&rows[i]); err != nil {
			return RunLog{RunID: runID}, err
		}
	}
	return RunLog{RunID: runID, Records: lr.records}, nil
}

// LogVersionError is a stored record of a newer major version of the log
// format than this library reads: not corruption (a newer library wrote
// it), but the log cannot be read. Err wraps ErrLogVersion.
type LogVersionError struct {
	RunID string
	Seq   int64
	Kind  RecordKind
	Err   error
}

func (e *LogVersionError) Error() string {
	return fmt.Sprintf("polyloop: run %q: record %d (%s): %v", e.RunID, e.Seq, e.Kind, e.Err)
}

// Unwrap returns the decoding error (errors.Is(err, ErrLogVersion)).
func (e *LogVersionError) Unwrap() error { return e.Err }

// logReader turns the rows of one run, in seq order, into its records.
type logReader struct {
	runID   string
	records []Record
}

// add checks and decodes the next row, and resolves the tool call an action
// intent refers to.
func (lr *logReader) add(row *Row) error {
	r, err := lr.decode(row)
	if err != nil {
		return err
	}
	r = resolveToolCall(lr.records, r)
	if in, ok := r.Body.(*ActionIntent); ok && leavesOutAction(in) {
		return lr.corrupt(row.Seq, r.Kind(), fmt.Sprintf("action_intent %q refers to tool call %d of model result %q, which the log before it does not have", in.ActionID, in.ToolCall, in.ModelCallID))
	}
	lr.records = append(lr.records, r)
	return nil
}

func (lr *logReader) decode(row *Row) (Record, error) {
	var r Record
	if next := int64(len(lr.records)); row.Seq != next {
		return r, lr.corrupt(row.Seq, row.Kind, gap(next, row.Seq))
	}
	if row.Data == nil {
		r = row.Record // a RecordKeeper's
		if r.Body == nil {
			return r, lr.corrupt(row.Seq, row.Kind, "the row holds neither bytes nor a record")
		}
		return r, lr.same(row, r)
	}
	if !row.Unchecked {
		if sum := checksum(row.Data); sum != row.Checksum {
			return r, lr.corrupt(row.Seq, row.Kind, fmt.Sprintf("checksum mismatch: stored CRC-32C %08x, the stored bytes have %08x", row.Checksum, sum))
		}
	}
	if !utf8.Valid(row.Data) {
		return r, lr.corrupt(row.Seq, row.Kind, fmt.Sprintf("stored record holds invalid UTF-8 at byte %d", invalidUTF8At(row.Data)))
	}
	ref, err := r.decode(row.Data)
	if err != nil {
		if errors.Is(err, ErrLogVersion) && newerVersion(row.Data) {
			return r, &LogVersionError{RunID: lr.runID, Seq: row.Seq, Kind: row.Kind, Err: err}
		}
		return r, lr.corrupt(row.Seq, row.Kind, "stored record does not decode: "+err.Error())
	}
	if ref != "" {
		if err := lr.resolve(row, r, ref); err != nil {
			return r, err
		}
	}
	return r, lr.same(row, r)
}

// resolve puts the shared snapshot a run_started row refers to, which the
// store returned with the row (SnapshotKeeper), into the record.
func (lr *logReader) resolve(row *Row, r Record, ref string) error {
	sh := row.Shared
	if sh == nil {
		return lr.corrupt(r.Seq, r.Kind(), fmt.Sprintf("run_started refers to shared snapshot %s, which the store did not return with it", ref))
	}
	if sh.Data == nil {
		return lr.corrupt(r.Seq, r.Kind(), fmt.Sprintf("run_started refers to shared snapshot %s, which the store does not have", ref))
	}
	if sh.Ref != ref {
		return lr.corrupt(r.Seq, r.Kind(), fmt.Sprintf("run_started refers to shared snapshot %s, and the store returned %s with it", ref, sh.Ref))
	}
	if err := resolveShared(r.Body.(*RunStarted), ref, sh.Data); err != nil {
		return lr.corrupt(r.Seq, r.Kind(), err.Error())
	}
	return nil
}

// same checks that a record says the seq and kind of its row.
func (lr *logReader) same(row *Row, r Record) error {
	if r.Seq != row.Seq {
		return lr.corrupt(row.Seq, row.Kind, fmt.Sprintf("record stored at seq %d says seq %d", row.Seq, r.Seq))
	}
	if r.Kind() != row.Kind {
		return lr.corrupt(row.Seq, row.Kind, fmt.Sprintf("record stored as kind %q says kind %q", row.Kind, r.Kind()))
	}
	return nil
}

// gap says which records are missing before the one stored at seq.
func gap(next, seq int64) string {
	if seq < next {
		return fmt.Sprintf("record %d is stored again after record %d", seq, next-1)
	}
	if seq == next+1 {
		return fmt.Sprintf("seq gap: record %d is missing before it", next)
	}
	return fmt.Sprintf("seq gap: records %d to %d are missing before it", next, seq-1)
}

func (lr *logReader) corrupt(seq int64, kind RecordKind, reason string) error {
	return &CorruptLogError{RunID: lr.runID, Seq: seq, Kind: kind, Reason: reason}
}

// newerVersion reports whether a record's "v" is a major version greater
// than the library's: then ErrLogVersion means the record is newer, not
// that it lacks its version (which no writer leaves out: corruption).
func newerVersion(data []byte) bool {
	var env struct {
		V *int `json:"v"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	return dec.Decode(&env) == nil && env.V != nil && *env.V > MaxRecordVersion
}
