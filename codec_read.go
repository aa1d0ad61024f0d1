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
// implement alone. A RowReader that is not a Store and has no
// ReadRowsFrom is read whole, even by a LogStream.
type RowReader interface {
	ReadRows(ctx context.Context, runID string) ([]Row, error)
}

// rangeReader is the ranged read of a Store (Store.ReadRowsFrom).
type rangeReader interface {
	ReadRowsFrom(ctx context.Context, runID string, from int64, limit int) ([]Row, error)
}

// LogChunkRows is how many rows a LogStream asks its store for at a time
// (Store.ReadRowsFrom): what it holds of a log at once.
const LogChunkRows = 256

// ReadLog reads a run's log from a store: its rows (Store.ReadRows, in
// one read), each checked and decoded as it is read. A run without rows
// gives an empty log and a nil error. A row that fails — a seq that is
// not the next one (a gap), a checksum that does not match its bytes,
// bytes that are not UTF-8 or do not decode, a record that says another
// seq or kind than its row, an action intent referring to a tool call the
// log before it does not have — makes the error a *CorruptLogError naming
// the run, the seq and the kind; a record of a newer major version of the
// format than this library reads is a *LogVersionError (errors.Is
// ErrLogVersion), which is no corruption. The store's own errors are
// returned as they are. Every reader of logs — Resume, Fork, the gate
// answers, and the CLI's show, view, export, verify and replay — reads
// through it or through its stream (StreamLog), whose records it collects:
// the checks are the stream's.
func ReadLog(ctx context.Context, src RowReader, runID string) (RunLog, error) {
	s := &LogStream{ctx: ctx, src: src, lr: logReader{runID: runID}, whole: true}
	var records []Record
	for s.Next() {
		if records == nil {
			records = make([]Record, 0, len(s.rows))
		}
		records = append(records, s.Record())
	}
	if err := s.Err(); err != nil {
		return RunLog{RunID: runID}, err
	}
	return RunLog{RunID: runID, Records: records}, nil
}

// LogStream reads a run's log a chunk of rows at a time
// (Store.ReadRowsFrom, LogChunkRows rows), checking and decoding each row
// as ReadLog does, so that a reader folds a log of any length holding one
// chunk of it: the run's page in the viewer, its live stream, a
// comparison. Its records are ReadLog's, one at a time:
//
//	s := polyloop.StreamLog(ctx, store, runID)
//	for s.Next() {
//		r := s.Record()
//		…
//	}
//	if err := s.Err(); err != nil { … }
//
// A log that grows while it is read is read as far as the chunk that
// comes back short: a prefix of the log ending at an Append's end. The
// first failure ends the stream: Err returns it (a *CorruptLogError, a
// *LogVersionError, the store's error, or ctx's). A LogStream is for one
// goroutine.
type LogStream struct {
	ctx   context.Context
	src   RowReader
	lr    logReader
	rows  []Row // the chunk being read
	i     int   // the next row of rows
	whole bool  // read the log in one ReadRows
	done  bool  // no chunk to ask for: the last came back short
	rec   Record
	err   error
	// read, for the stream of a log already read (RunLog.Stream), are
	// its records still to give.
	read    []Record
	hasRead bool
}

// StreamLog returns the stream of a run's log from src: in chunks when src
// is a Store (Store.ReadRowsFrom), whole otherwise (a bare RowReader).
// Nothing is read before the first Next.
func StreamLog(ctx context.Context, src RowReader, runID string) *LogStream {
	_, ranged := src.(rangeReader)
	return &LogStream{ctx: ctx, src: src, lr: logReader{runID: runID}, whole: !ranged}
}

// Next reads the next record; false at the end of the log or at the first
// failure (Err).
func (s *LogStream) Next() bool {
	if s.err != nil {
		return false
	}
	if s.hasRead {
		if len(s.read) == 0 {
			return false
		}
		s.rec, s.read = s.read[0], s.read[1:]
		return true
	}
	if s.i == len(s.rows) {
		if !s.fill() {
			return false
		}
	}
	r, err := s.lr.add(&s.rows[s.i]) // the rows are the store's: read, never modified
	s.i++
	if err != nil {
		s.err, s.rows = err, nil
		return false
	}
	s.rec = r
	return true
}

// fill reads the next chunk; false when there is none.
func (s *LogStream) fill() bool {
	if s.done {
		return false
	}
	var rows []Row
	var err error
	if s.whole {
		rows, err = s.src.ReadRows(s.ctx, s.lr.runID)
		s.done = true
	} else {
		rows, err = s.src.(rangeReader).ReadRowsFrom(s.ctx, s.lr.runID, s.lr.next, LogChunkRows)
		switch {
		case err == nil && len(rows) > LogChunkRows:
			err = s.lr.corrupt(s.lr.next, "", fmt.Sprintf("the store returned %d rows for a read of at most %d", len(rows), LogChunkRows))
		case len(rows) < LogChunkRows:
			s.done = true
		}
	}
	if err != nil {
		s.err, s.rows = err, nil
		return false
	}
	s.rows, s.i = rows, 0
	return len(rows) > 0
}

// Stream is the stream of a log already read: its records, as they are
// (ReadLog checked them), so that what folds a stream folds a RunLog.
func (l RunLog) Stream() *LogStream {
	return &LogStream{lr: logReader{runID: l.RunID}, read: l.Records, hasRead: true}
}

// Record is the record the last Next read. Its body may be shared with
// the store (a RecordKeeper's): it MUST NOT be modified.
func (s *LogStream) Record() Record { return s.rec }

// Err is the failure that ended the stream, nil at the end of the log.
func (s *LogStream) Err() error { return s.err }

// RunID is the run the stream reads.
func (s *LogStream) RunID() string { return s.lr.runID }

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

// logReader turns the rows of one run, in seq order, into its records,
// keeping of the records before only what the next needs: the last model
// result, whose tool calls the action intents after it refer to.
type logReader struct {
	runID string
	next  int64 // the seq of the next row
	// result holds the last model result read, or nothing.
	result []Record
}

// add checks and decodes the next row, and resolves the tool call an action
// intent refers to.
func (lr *logReader) add(row *Row) (Record, error) {
	r, err := lr.decode(row)
	if err != nil {
		return r, err
	}
	r = resolveToolCall(lr.result, r)
	if in, ok := r.Body.(*ActionIntent); ok && leavesOutAction(in) {
		return r, lr.corrupt(row.Seq, r.Kind(), fmt.Sprintf("action_intent %q refers to tool call %d of model result %q, which the log before it does not have", in.ActionID, in.ToolCall, in.ModelCallID))
	}
	if _, ok := r.Body.(*ModelCallResult); ok {
		lr.result = append(lr.result[:0], r)
	}
	lr.next++
	return r, nil
}

func (lr *logReader) decode(row *Row) (Record, error) {
	var r Record
	if next := lr.next; row.Seq != next {
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
