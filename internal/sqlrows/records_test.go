package sqlrows

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// rowOf is the row a store writes for rec, with its checksum.
func rowOf(t *testing.T, rec polyloop.Record) RecordRow {
	t.Helper()
	data, err := rec.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	crc := Checksum(data)
	return RecordRow{Seq: rec.Seq, Kind: string(rec.Kind()), Data: data, CRC: &crc}
}

func intent(seq int64, step int) polyloop.Record {
	return polyloop.Record{Seq: seq, At: time.Unix(1, 0).UTC(), Body: &polyloop.ModelCallIntent{Step: step, CallID: "m1.1", Attempt: 1}}
}

// reader is a LogReader of run r that already holds records 0..n-1.
func reader(t *testing.T, n int) *LogReader {
	lr := &LogReader{RunID: "r"}
	for i := range n {
		if err := lr.Add(rowOf(t, intent(int64(i), 1))); err != nil {
			t.Fatal(err)
		}
	}
	return lr
}

func TestLogReaderReads(t *testing.T) {
	t.Parallel()
	lr := reader(t, 3)
	if len(lr.Records) != 3 || lr.Records[2].Seq != 2 || lr.Records[2].Kind() != polyloop.KindModelCallIntent {
		t.Fatalf("records %+v", lr.Records)
	}
	// A row written before checksums has none and is read unchecked.
	row := rowOf(t, intent(3, 1))
	row.CRC = nil
	if err := lr.Add(row); err != nil || len(lr.Records) != 4 {
		t.Fatalf("row without a checksum: %v", err)
	}
}

// TestLogReaderCorruption: every damage to a row is a corrupt log at that
// row's seq, with the run and the kind named.
func TestLogReaderCorruption(t *testing.T) {
	t.Parallel()
	good := func(t *testing.T) RecordRow { return rowOf(t, intent(2, 1)) }
	tests := []struct {
		name   string
		damage func(r *RecordRow)
		seq    int64
		reason string
	}{
		{"flipped byte inside a string", func(r *RecordRow) { r.Data = bytes.Replace(r.Data, []byte(`"m1.1"`), []byte(`"M1.1"`), 1) },
			2, "checksum mismatch"},
		{"flipped byte, no checksum, invalid UTF-8", func(r *RecordRow) {
			r.CRC = nil
			r.Data = bytes.Replace(r.Data, []byte(`"m1.1"`), []byte("\"m1\xff1\""), 1)
		}, 2, "invalid UTF-8 at byte"},
		{"checksum column damaged", func(r *RecordRow) { *r.CRC ^= 1 }, 2, "checksum mismatch"},
		{"truncated data", func(r *RecordRow) { r.Data = r.Data[:len(r.Data)/2]; r.CRC = nil }, 2, "does not decode"},
		{"record of another seq", func(r *RecordRow) {
			other := rowOf(t, intent(3, 1))
			r.Data, r.CRC = other.Data, other.CRC
		}, 2, "record stored at seq 2 says seq 3"},
		{"seq gap", func(r *RecordRow) { r.Seq = 3 }, 3, "seq gap: record 2 is missing before it"},
		{"seq gap of two", func(r *RecordRow) { r.Seq = 4 }, 4, "seq gap: records 2 to 3 are missing before it"},
		{"kind column lies", func(r *RecordRow) { r.Kind = "run_finished" }, 2, `stored as kind "run_finished" says kind "model_call_intent"`},
		{"no version field", func(r *RecordRow) {
			r.Data = bytes.Replace(r.Data, []byte(`,"v":1`), nil, 1)
			r.CRC = nil
		}, 2, "no version field"},
		{"unknown kind", func(r *RecordRow) {
			r.Data = bytes.Replace(r.Data, []byte(`"model_call_intent"`), []byte(`"model_call_intend"`), 1)
			r.CRC = nil
		}, 2, "unknown record kind"},
	}
	for _, tc := range tests {
		lr := reader(t, 2)
		row := good(t)
		tc.damage(&row)
		err := lr.Add(row)
		var ce *polyloop.CorruptLogError
		if !errors.As(err, &ce) || ce.RunID != "r" || ce.Seq != tc.seq || ce.Kind == "" || !strings.Contains(ce.Reason, tc.reason) {
			t.Errorf("%s: %v, want a corrupt log of run r at seq %d, with its kind, saying %q", tc.name, err, tc.seq, tc.reason)
		}
		if strings.Contains(err.Error(), `""`) || strings.Contains(err.Error(), "()") {
			t.Errorf("%s: the error leaves the run or the kind out: %v", tc.name, err)
		}
		if len(lr.Records) != 2 {
			t.Errorf("%s: the damaged row was kept", tc.name)
		}
	}
}

// A newer major version is no corruption: the error says ErrLogVersion and
// names the run and the seq.
func TestLogReaderNewerVersion(t *testing.T) {
	t.Parallel()
	lr := reader(t, 3)
	v2 := []byte(`{"seq":3,"at":"2026-01-01T00:00:00Z","kind":"run_started","v":3}`)
	crc := Checksum(v2)
	err := lr.Add(RecordRow{Seq: 3, Kind: "run_started", Data: v2, CRC: &crc})
	if !errors.Is(err, polyloop.ErrLogVersion) || errors.Is(err, polyloop.ErrCorruptLog) || !strings.Contains(err.Error(), `run "r": record 3`) {
		t.Errorf("a newer major version: %v, want ErrLogVersion naming run r and record 3, not corruption", err)
	}
}

// FuzzLogReader: whatever bytes a row holds, with or without a checksum of
// its own, the reader never panics, and a row it refuses is a corrupt log at
// that row's seq, naming the run and the kind, or a newer major version.
func FuzzLogReader(f *testing.F) {
	for _, seed := range []string{`{"seq":1,"at":"2026-01-01T00:00:00Z","kind":"model_call_intent","v":1,"step":1,"call_id":"m1.1","attempt":1}`,
		`{"seq":1,"kind":"run_started","v":2}`, `{"seq":1}`, "\xff", `[[[`, `{"seq":1,"at":"x","kind":"step_completed","v":1,"step":"1"}`} {
		f.Add([]byte(seed), true)
		f.Add([]byte(seed), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, checksummed bool) {
		lr := &LogReader{RunID: "r"}
		if err := lr.Add(rowOf(t, intent(0, 1))); err != nil {
			t.Fatal(err)
		}
		row := RecordRow{Seq: 1, Kind: "model_call_intent", Data: data}
		if checksummed {
			c := Checksum(data)
			row.CRC = &c
		}
		err := lr.Add(row)
		var ce *polyloop.CorruptLogError
		switch {
		case err == nil:
			if len(lr.Records) != 2 || lr.Records[1].Seq != 1 {
				t.Fatalf("accepted row gives records %+v", lr.Records)
			}
		case errors.As(err, &ce):
			if ce.RunID != "r" || ce.Seq != 1 || ce.Kind == "" {
				t.Fatalf("corrupt log without its place: %+v", ce)
			}
		case !errors.Is(err, polyloop.ErrLogVersion):
			t.Fatalf("refused with %v, neither corruption nor a newer version", err)
		}
	})
}

// rawRow is the row a store writes for data, with its checksum.
func rawRow(seq int64, kind polyloop.RecordKind, data string) RecordRow {
	crc := Checksum([]byte(data))
	return RecordRow{Seq: seq, Kind: string(kind), Data: []byte(data), CRC: &crc}
}

// Version 2 is only for an action intent that leaves its action out for a
// tool call; on any other record it is corruption, not a newer version.
func TestLogReaderVersion2ElsewhereIsCorrupt(t *testing.T) {
	t.Parallel()
	env := `{"seq":3,"at":"2026-01-01T00:00:00Z","kind":`
	for _, tc := range []struct {
		kind polyloop.RecordKind
		data string
	}{
		{polyloop.KindModelCallIntent, env + `"model_call_intent","v":2,"step":1,"call_id":"m1.1","attempt":1}`},
		{polyloop.KindActionIntent, env + `"action_intent","v":2,"step":1,"action_id":"a1","attempt":1,"model_call_id":"m1.1","action":{"tool":"t"},"replay":"replay_safe"}`},
		{polyloop.KindActionIntent, env + `"action_intent","v":2,"step":1,"action_id":"a1","attempt":1,"model_call_id":"m1.1","action":{"tool":"t"},"replay":"replay_safe","tool_call":1}`},
	} {
		err := reader(t, 3).Add(rawRow(3, tc.kind, tc.data))
		var ce *polyloop.CorruptLogError
		if !errors.As(err, &ce) || ce.RunID != "r" || ce.Seq != 3 || ce.Kind != tc.kind || errors.Is(err, polyloop.ErrLogVersion) {
			t.Errorf("%s: %v, want a corrupt log at run r, record 3, not ErrLogVersion", tc.data, err)
		}
	}
}

// An action intent that refers to a tool call the log before it does not
// have is a corrupt log at its seq, not a record without its action.
func TestLogReaderUnresolvedToolCall(t *testing.T) {
	t.Parallel()
	result := `{"seq":3,"at":"2026-01-01T00:00:00Z","kind":"model_call_result","v":1,"step":1,"call_id":"m1.1","reply":{"tool_calls":[{"id":"c1","name":"t","args":{}}],"usage":{}}}`
	ref := func(toolCall int, callID string) string {
		return fmt.Sprintf(`{"seq":4,"at":"2026-01-01T00:00:00Z","kind":"action_intent","v":2,"step":1,"action_id":"a1","attempt":1,"model_call_id":%q,"replay":"replay_safe","tool_call":%d}`, callID, toolCall)
	}
	for _, data := range []string{ref(2, "m1.1"), ref(1, "m9.1")} {
		lr := reader(t, 3)
		if err := lr.Add(rawRow(3, polyloop.KindModelCallResult, result)); err != nil {
			t.Fatal(err)
		}
		err := lr.Add(rawRow(4, polyloop.KindActionIntent, data))
		var ce *polyloop.CorruptLogError
		if !errors.As(err, &ce) || ce.RunID != "r" || ce.Seq != 4 || ce.Kind != polyloop.KindActionIntent || len(lr.Records) != 4 {
			t.Errorf("%s: %v (%d records kept), want a corrupt log at run r, record 4", data, err, len(lr.Records))
		}
	}
	lr := reader(t, 3)
	if err := lr.Add(rawRow(3, polyloop.KindModelCallResult, result)); err != nil {
		t.Fatal(err)
	}
	if err := lr.Add(rawRow(4, polyloop.KindActionIntent, ref(1, "m1.1"))); err != nil {
		t.Fatal(err)
	}
	if a := lr.Records[4].Body.(*polyloop.ActionIntent).Action; a.CallID != "c1" || a.Tool != "t" || string(a.Args) != "{}" {
		t.Fatalf("the intent reads back with action %+v, want tool call 1", a)
	}
}
