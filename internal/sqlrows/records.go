package sqlrows

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"unicode/utf8"

	"github.com/polyloop/polyloop"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum is the checksum a store keeps with a record: the CRC-32C
// (Castagnoli) of the record's stored bytes, as an int64 (both drivers'
// integer; it is never negative).
func Checksum(data []byte) int64 { return int64(crc32.Checksum(data, castagnoli)) }

// RecordRow is one row of a records table, as a store reads it.
type RecordRow struct {
	Seq  int64
	Kind string
	Data []byte
	// CRC is the stored checksum; nil for a record written before the
	// store kept checksums, which is read unchecked.
	CRC *int64
}

// LogReader turns the rows of one run, read in seq order, into its records,
// checking each row: its seq is the next one (no gap before it), its checksum (when
// it has one) matches its bytes, its bytes are UTF-8, it decodes, and it
// says the seq and kind it is stored under. A row that fails is a
// *polyloop.CorruptLogError naming the run, the seq and the kind (the kind
// column's, the data may not say), except a record of a newer major
// version of the format, which is no corruption: its error is a
// *VersionError (wrapping polyloop.ErrLogVersion) naming the run and the
// seq. An action intent that refers to a tool call without its action gets
// it from the model result before it (polyloop.ResolveToolCall); one that
// none has is a *polyloop.CorruptLogError too.
type LogReader struct {
	RunID   string
	Records []polyloop.Record
}

// Add checks and decodes the next row.
func (lr *LogReader) Add(row RecordRow) error {
	r, err := lr.decode(row)
	if err != nil {
		return err
	}
	r = polyloop.ResolveToolCall(lr.Records, r)
	if polyloop.UnresolvedToolCall(r) {
		in := r.Body.(*polyloop.ActionIntent)
		return lr.corrupt(row.Seq, r.Kind(), fmt.Sprintf("action_intent %q refers to tool call %d of model result %q, which the log before it does not have", in.ActionID, in.ToolCall, in.ModelCallID))
	}
	lr.Records = append(lr.Records, r)
	return nil
}

// Next is the seq the next row must have.
func (lr *LogReader) Next() int64 { return int64(len(lr.Records)) }

func (lr *LogReader) decode(row RecordRow) (polyloop.Record, error) {
	var r polyloop.Record
	kind := polyloop.RecordKind(row.Kind)
	if next := lr.Next(); row.Seq != next {
		return r, lr.corrupt(row.Seq, kind, gap(next, row.Seq))
	}
	if row.CRC != nil {
		if sum := Checksum(row.Data); sum != *row.CRC {
			return r, lr.corrupt(row.Seq, kind, fmt.Sprintf("checksum mismatch: stored CRC-32C %08x, the stored bytes have %08x", *row.CRC, sum))
		}
	}
	if !utf8.Valid(row.Data) {
		return r, lr.corrupt(row.Seq, kind, fmt.Sprintf("stored record holds invalid UTF-8 at byte %d", polyloop.InvalidUTF8At(row.Data)))
	}
	if err := r.UnmarshalJSON(row.Data); err != nil {
		if errors.Is(err, polyloop.ErrLogVersion) && newerVersion(row.Data) {
			return r, &VersionError{RunID: lr.RunID, Seq: row.Seq, Kind: kind, Err: err}
		}
		return r, lr.corrupt(row.Seq, kind, "stored record does not decode: "+err.Error())
	}
	if r.Seq != row.Seq {
		return r, lr.corrupt(row.Seq, kind, fmt.Sprintf("record stored at seq %d says seq %d", row.Seq, r.Seq))
	}
	if r.Kind() != kind {
		return r, lr.corrupt(row.Seq, kind, fmt.Sprintf("record stored as kind %q says kind %q", kind, r.Kind()))
	}
	return r, nil
}

// VersionError is a stored record of a newer major version of the log
// format than this library reads: not corruption (a newer polyloop wrote
// it), but the log cannot be read. Err wraps polyloop.ErrLogVersion.
type VersionError struct {
	RunID string
	Seq   int64
	Kind  polyloop.RecordKind
	Err   error
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("run %q: record %d (%s): %v", e.RunID, e.Seq, e.Kind, e.Err)
}

// Unwrap returns the decoding error (errors.Is(err, polyloop.ErrLogVersion)).
func (e *VersionError) Unwrap() error { return e.Err }

// gap says which records are missing before the one stored at seq.
func gap(next, seq int64) string {
	if seq == next+1 {
		return fmt.Sprintf("seq gap: record %d is missing before it", next)
	}
	return fmt.Sprintf("seq gap: records %d to %d are missing before it", next, seq-1)
}

// Prefixed is an error of Add as the store named store returns it: with
// the store's name before it, but for a *polyloop.CorruptLogError, which
// says what it is itself ("polyloop: corrupt run log …": one prefix, not
// "sqlitestore: polyloop: …").
func Prefixed(store string, err error) error {
	var corrupt *polyloop.CorruptLogError
	if errors.As(err, &corrupt) {
		return err
	}
	return fmt.Errorf("%s: %w", store, err)
}

func (lr *LogReader) corrupt(seq int64, kind polyloop.RecordKind, reason string) error {
	return &polyloop.CorruptLogError{RunID: lr.RunID, Seq: seq, Kind: kind, Reason: reason}
}

// newerVersion reports whether a record's "v" is a major version greater
// than the library's: then ErrLogVersion means the record is newer, not
// that it lacks its version (which no writer leaves out: corruption).
func newerVersion(data []byte) bool {
	var env struct {
		V *int `json:"v"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	return dec.Decode(&env) == nil && env.V != nil && *env.V > polyloop.MaxRecordVersion
}
