package polyloop

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"slices"
	"sync"
	"time"
)

// Row is one record of a run's log as a Store keeps it: the record's bytes
// and what the store keys them by. The Runner makes the rows of every
// Append — it encodes each record once, checks it against the log's limits
// and computes its checksum — and reads them back through one reader
// (ReadLog), which checks and decodes them; a store only keeps them (see
// Store).
type Row struct {
	// Seq is the record's position in its run: 0, 1, 2, …
	Seq int64
	// Kind is the record's kind, as its Data says it.
	Kind RecordKind
	// Data is the record's encoding: one JSON object in valid UTF-8, at
	// most MaxRecordBytes long (docs/log-format.md). Nil in the rows of a
	// RecordKeeper.
	Data []byte
	// Checksum is the CRC-32C (Castagnoli) of Data.
	Checksum uint32
	// Unchecked marks a row read back without a checksum: one a store
	// kept before it stored checksums. The reader then checks Data for
	// everything but a change that leaves it valid. The Runner never sets
	// it on Append.
	Unchecked bool
	// Shared, on the run_started row appended to a SnapshotKeeper, is the
	// configuration snapshot the row refers to instead of holding it; the
	// store keeps it with the row (SnapshotKeeper). Nil on every other row
	// and for every other store.
	Shared *SharedSnapshot
	// Record is the record Data encodes, as the Runner built it: always
	// set on Append, for a store that folds summaries (RunSummary.Apply)
	// or keeps records (RecordKeeper); neither side modifies it. On
	// ReadRows only a RecordKeeper's rows carry it.
	Record Record
}

// castagnoli is the table of the rows' checksums.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksum is a row's checksum of data.
func checksum(data []byte) uint32 { return crc32.Checksum(data, castagnoli) }

// AppendRecords appends records to a run's log in one Store.Append, as the
// Runner does: it checks them — consecutive seqs (ErrNotConsecutive), each
// with a body, each within the log's limits once encoded (ErrJSONLimit), an
// action intent appended with the model result it refers to being that
// result's tool call (ErrToolCallMismatch) — encodes each once and hands
// the store their rows. A record refused is refused before anything is
// written. It is for tools and tests that build logs; a run's own records
// go through the Runner. The store's errors are returned as they are.
func AppendRecords(ctx context.Context, s Store, runID string, records ...Record) error {
	if len(records) == 0 {
		return nil
	}
	_, keeper := s.(RecordKeeper)
	_, shares := s.(SnapshotKeeper)
	rows, _, err := rowsOf(runID, records, rowOpts{encode: !keeper, share: shares && !keeper}, nil, nil)
	if err != nil {
		return err
	}
	return s.Append(ctx, runID, rows)
}

// rowOpts say how rowsOf makes rows.
type rowOpts struct {
	// encode: the store keeps bytes (not a RecordKeeper).
	encode bool
	// checked: the JSON values the records hold were checked against the
	// log's limits where they entered (the machine's: compactArgs for a
	// reply's tool calls, checkActions for a decision's actions, the
	// reader for a log read back), so withinLimits need not check them
	// again. Records from elsewhere (AppendRecords) are not.
	checked bool
	// share: the store keeps snapshots once (SnapshotKeeper): a
	// run_started row refers to its snapshot (Row.Shared).
	share bool
}

// rowsOf checks the records of one Append and makes their rows, in rows
// (a scratch slice, reused) and, encoded, in buf (likewise), each Data
// slice capped at its own end, with their checksums; or, for a
// RecordKeeper, without bytes, the records checked all the same
// (withinLimits). It returns the scratch slices for the next write.
func rowsOf(runID string, records []Record, o rowOpts, rows []Row, buf []byte) ([]Row, []byte, error) {
	encode := o.encode
	rows = slices.Grow(rows[:0], len(records))[:len(records)]
	if encode {
		size := 0
		for _, r := range records {
			size += recordSizeHint(r)
		}
		buf = slices.Grow(buf[:0], size)
	}
	for i, r := range records {
		if i > 0 && r.Seq != records[i-1].Seq+1 {
			return rows, buf, fmt.Errorf("%w: run %q: record %d has seq %d after seq %d", ErrNotConsecutive, runID, i, r.Seq, records[i-1].Seq)
		}
		ref, err := referToToolCall(records[:i], r)
		if err != nil {
			return rows, buf, fmt.Errorf("polyloop: run %q: record %d (%s) is refused: %w", runID, r.Seq, r.Kind(), err)
		}
		rows[i] = Row{Seq: r.Seq, Kind: r.Kind(), Record: r}
		if !encode {
			if err := checkRecord(runID, r, ref, o.checked); err != nil {
				return rows, buf, err
			}
			continue
		}
		start := len(buf)
		if buf, err = encodeChecked(runID, buf, r, ref); err != nil {
			return rows, buf, err
		}
		if b, ok := r.Body.(*RunStarted); ok && o.share {
			// Checked whole above, so that what one store accepts every
			// store accepts; written with a reference to its snapshot.
			sh, err := shareSnapshot(b.Snapshot)
			if err != nil {
				return rows, buf, fmt.Errorf("polyloop: run %q: encoding record %d: %w", runID, r.Seq, err)
			}
			if buf, err = appendSharedRunStarted(buf[:start], r, b, sh); err != nil {
				return rows, buf, fmt.Errorf("polyloop: run %q: encoding record %d: %w", runID, r.Seq, err)
			}
			rows[i].Shared = &sh
		}
		data := buf[start:len(buf):len(buf)]
		rows[i].Data, rows[i].Checksum = data, checksum(data)
	}
	return rows, buf, nil
}

// encodeChecked appends r's encoding to buf and checks it against the log's
// limits.
func encodeChecked(runID string, buf []byte, r Record, ref bool) ([]byte, error) {
	start := len(buf)
	buf, err := appendRecord(buf, r, ref)
	if err != nil {
		return buf, fmt.Errorf("polyloop: run %q: encoding record %d: %w", runID, r.Seq, err)
	}
	if err := CheckRecordLimits(buf[start:]); err != nil {
		return buf, fmt.Errorf("polyloop: run %q: record %d (%s) is refused, it would not read back: %w", runID, r.Seq, r.Kind(), err)
	}
	return buf, nil
}

// checkRecord checks a record a RecordKeeper is given as encodeChecked
// does, refusing what it refuses with the same error, without encoding it
// when withinLimits can tell it is within the log's limits.
func checkRecord(runID string, r Record, ref, checked bool) error {
	if r.Body != nil && withinLimits(r, ref, checked) {
		return nil
	}
	bp := checkBuffers.Get().(*[]byte)
	buf, err := encodeChecked(runID, (*bp)[:0], r, ref)
	if cap(buf) <= 1<<20 {
		*bp = buf[:0]
		checkBuffers.Put(bp)
	}
	return err
}

// checkBuffers hold checkRecord's scratch encodings.
var checkBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// withinLimits reports whether r's encoding is certainly within the log's
// limits, and certainly encodes, without encoding it: for the records of a
// step, whose fields it knows, when an upper bound of the encoding's size
// is under MaxRecordBytes and every JSON value the record holds is valid,
// in UTF-8 and within MaxJSONDepth (a step's record nests its values at
// most four levels down). ref says an action intent leaves out its action,
// the tool call of a model result of its batch, checked with that result;
// checked, that the values were checked where they entered (rowOpts).
// False means "encode it and see", never "refused".
func withinLimits(r Record, ref, checked bool) bool {
	if y := r.At.UTC().Year(); y < 1 || y > 9999 {
		return false
	}
	n, ok := 0, true
	switch b := r.Body.(type) {
	case *ModelCallIntent:
		n = 256 + stringBound(b.CallID)
		if v := b.View; v != nil {
			n += 64 + stringBound(v.Name)
		}
	case *ModelCallResult:
		n, ok = resultBound(b, checked)
	case *ActionIntent:
		a := &b.Action
		n = 512 + stringBound(b.ActionID) + stringBound(b.ModelCallID) + stringBound(string(b.Replay)) + stringBound(string(b.EnvSnapshot)) +
			stringBound(a.CallID) + stringBound(a.Tool) + stringBound(a.Code) + stringBound(a.Lang) + len(a.Args)
		ok = ref || checked || validValue(a.Args)
	case *StepCompleted:
		n = 256 + stringBound(b.ModelCallID) + stringBound(string(b.Decision)) + stringBound(b.Feedback) +
			stringBound(b.Answer) + settledBound(&b.SettledAction)
	case *ActionResult:
		n = 64 + settledBound(&b.SettledAction)
	default:
		return false
	}
	return ok && n <= MaxRecordBytes
}

// resultBound bounds a model result's encoding; false when it holds what
// withinLimits leaves to the encoder: a failure's diagnostic, a failed
// call's usage, a cost that may not be finite.
func resultBound(b *ModelCallResult, checked bool) (int, bool) {
	if b.Failure != nil || b.Usage != nil {
		return 0, false
	}
	n := 256 + stringBound(b.CallID)
	r := b.Reply
	if r == nil {
		return n, true
	}
	if c := r.Usage.CostUSD; c != nil && !(*c > -1e300 && *c < 1e300) {
		return 0, false
	}
	n += 256 + stringBound(r.Text) + stringBound(r.Model) + stringBound(r.FinishReason) + stringBound(r.RequestID)
	for i := range r.ToolCalls {
		tc := &r.ToolCalls[i]
		if !checked && !validValue(tc.Args) {
			return 0, false
		}
		n += 64 + stringBound(tc.ID) + stringBound(tc.Name) + len(tc.Args)
	}
	return n, true
}

func settledBound(s *SettledAction) int {
	n := 256 + stringBound(s.ResultID) + stringBound(s.Observation) + stringBound(s.Audit) + stringBound(string(s.EnvSnapshot))
	if o := s.Outcome; o != nil {
		n += 128 + stringBound(string(o.Status))
	}
	return n
}

// stringBound bounds the encoding of s as a JSON string: each byte takes at
// most six once escaped.
func stringBound(s string) int { return 2 + 6*len(s) }

// validValue reports whether a JSON value a step's record holds is
// certainly encoded within the limits: empty, or valid JSON in UTF-8
// within MaxJSONDepth.
func validValue(raw []byte) bool {
	return len(raw) == 0 || (CheckJSONLimits(raw) == nil && json.Valid(raw))
}

// RecordKeeper is an optional interface of a Store that keeps records as
// values in the caller's process instead of their bytes (memstore). The
// Runner hands it rows without Data (Checksum zero), their Record checked
// against the log's limits all the same — so that what a RecordKeeper
// accepts, every store accepts — and reads back the Record of each row it
// returns, without decoding anything. Records are shared between the two:
// neither modifies them.
type RecordKeeper interface {
	Store
	// KeepsRecords marks the interface; it does nothing.
	KeepsRecords()
}

// stamp sets the time of records that have none (a fork's copies keep
// theirs).
func stamp(recs []Record, at time.Time) {
	for i := range recs {
		if recs[i].At.IsZero() {
			recs[i].At = at
		}
	}
}
