package polyloop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// MarshalJSON encodes the record as one flat object (appendRecord). An
// action intent that refers to a tool call (ActionIntent.ToolCall) keeps
// its action, unless it is empty: alone, the record has no reply to check
// the action against.
func (r Record) MarshalJSON() ([]byte, error) {
	ref, err := referToToolCall(nil, r)
	if err != nil {
		return nil, err
	}
	return appendRecord(make([]byte, 0, recordSizeHint(r)), r, ref)
}

type envelope struct {
	Seq  *int64     `json:"seq"`
	At   time.Time  `json:"at"`
	Kind RecordKind `json:"kind"`
	V    int        `json:"v"`
}

// UnmarshalJSON decodes a flat record. It refuses a record of a greater
// version than MaxRecordVersion with ErrLogVersion, a record of version 2
// that is not an action intent leaving its action out, and an unknown kind.
// The records of a step, as the library writes them, are decoded in one
// pass (decodeStep); any other text is decoded the generic way.
//
// A run_started row that refers to a shared snapshot (version 3, written
// to a SnapshotKeeper) does not decode alone: only ReadLog, which reads
// the snapshot from the store, reads it.
func (r *Record) UnmarshalJSON(data []byte) error {
	ref, err := r.decode(data)
	if err == nil && ref != "" {
		*r = Record{}
		return fmt.Errorf("polyloop: run_started record refers to shared snapshot %s, which only its store holds (read the log with ReadLog)", ref)
	}
	return err
}

// decode decodes a record; for a run_started row that refers to a shared
// snapshot, it returns the record with its snapshot's task alone and the
// reference.
func (r *Record) decode(data []byte) (ref string, err error) {
	if rec, ok := decodeStep(data); ok {
		*r = rec
		return "", nil
	}
	return r.unmarshalGeneric(data)
}

// unmarshalGeneric decodes a record with encoding/json: the envelope, then
// the body.
func (r *Record) unmarshalGeneric(data []byte) (string, error) {
	env, ok := fastEnvelope(data)
	if !ok {
		if err := json.Unmarshal(data, &env); err != nil {
			return "", err
		}
	}
	if env.V > MaxRecordVersion {
		return "", fmt.Errorf("%w: record has major version %d, this library reads up to %d", ErrLogVersion, env.V, MaxRecordVersion)
	}
	if env.V < 1 {
		return "", fmt.Errorf("%w: record has no version field", ErrLogVersion)
	}
	if env.Seq == nil {
		return "", fmt.Errorf("polyloop: record has no seq")
	}
	if env.V == sharedVersion {
		rec, ref, err := decodeShared(data, env)
		if err != nil {
			return "", err
		}
		*r = rec
		return ref, nil
	}
	body := newBody(env.Kind)
	if body == nil {
		return "", fmt.Errorf("polyloop: unknown record kind %q", env.Kind)
	}
	if err := json.Unmarshal(data, body); err != nil {
		return "", fmt.Errorf("polyloop: decoding %s record: %w", env.Kind, err)
	}
	if env.V == 2 && !leavesOutAction(body) {
		return "", fmt.Errorf("polyloop: %s record has version 2, which only an action_intent that leaves its action out for a tool call has", env.Kind)
	}
	r.Seq, r.At, r.Body = *env.Seq, env.At, body
	return "", nil
}

func newBody(k RecordKind) RecordBody {
	switch k {
	case KindRunStarted:
		return &RunStarted{}
	case KindModelCallIntent:
		return &ModelCallIntent{}
	case KindModelCallResult:
		return &ModelCallResult{}
	case KindActionIntent:
		return &ActionIntent{}
	case KindStepCompleted:
		return &StepCompleted{}
	case KindRunFinished:
		return &RunFinished{}
	case KindConfigOverride:
		return &ConfigOverride{}
	case KindChildReception:
		return &ChildReception{}
	case KindActionResult:
		return &ActionResult{}
	case KindApprovalRequested:
		return &ApprovalRequested{}
	case KindApprovalDecided:
		return &ApprovalDecided{}
	case KindDeliveryRequested:
		return &DeliveryRequested{}
	case KindDeliveryReceived:
		return &DeliveryReceived{}
	case KindLeaseTakeover:
		return &LeaseTakeover{}
	case KindMaintenanceOp:
		return &MaintenanceOp{}
	case KindMaintenanceDone:
		return &MaintenanceDone{}
	case KindActionReconciled:
		return &ActionReconciled{}
	}
	return nil
}

// EncodeRecords encodes records as JSON lines, one record per line.
func EncodeRecords(records []Record) ([]byte, error) {
	var buf bytes.Buffer
	for i, r := range records {
		ref, err := referToToolCall(records[:i], r)
		if err != nil {
			return nil, fmt.Errorf("polyloop: record %d (%s): %w", r.Seq, r.Kind(), err)
		}
		b, err := appendRecord(buf.AvailableBuffer(), r, ref)
		if err != nil {
			return nil, err
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

// fastEnvelope reads the envelope of a record written by MarshalJSON, whose
// fields come first in a fixed order, without a second full decode of the
// record. Anything else falls back to the generic decoder.
func fastEnvelope(data []byte) (envelope, bool) {
	var env envelope
	rest, ok := bytes.CutPrefix(data, []byte(`{"seq":`))
	if !ok {
		return env, false
	}
	i := bytes.IndexByte(rest, ',')
	if i < 0 {
		return env, false
	}
	seq, err := strconv.ParseInt(string(rest[:i]), 10, 64)
	if err != nil {
		return env, false
	}
	if rest, ok = bytes.CutPrefix(rest[i:], []byte(`,"at":"`)); !ok {
		return env, false
	}
	if i = bytes.IndexByte(rest, '"'); i < 0 {
		return env, false
	}
	at, err := time.Parse(time.RFC3339Nano, string(rest[:i]))
	if err != nil {
		return env, false
	}
	if rest, ok = bytes.CutPrefix(rest[i:], []byte(`","kind":"`)); !ok {
		return env, false
	}
	if i = bytes.IndexByte(rest, '"'); i < 0 {
		return env, false
	}
	kind := RecordKind(rest[:i])
	if rest, ok = bytes.CutPrefix(rest[i:], []byte(`","v":`)); !ok {
		return env, false
	}
	j := bytes.IndexAny(rest, ",}")
	if j < 0 {
		return env, false
	}
	v, err := strconv.Atoi(string(rest[:j]))
	if err != nil {
		return env, false
	}
	env.Seq, env.At, env.Kind, env.V = &seq, at, kind, v
	return env, true
}
