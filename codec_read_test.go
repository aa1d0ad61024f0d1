package polyloop_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
)

// The reader (ReadLog) checks and decodes every row a store gives back; a
// store only keeps them. These tests hand it rows directly.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// rowOf is the row a store keeps for rec: its encoding and checksum.
func rowOf(t testing.TB, rec polyloop.Record) polyloop.Row {
	t.Helper()
	data, err := rec.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return polyloop.Row{Seq: rec.Seq, Kind: rec.Kind(), Data: data, Checksum: crc32.Checksum(data, castagnoli)}
}

// rawRow is the row of data as a store keeps it, with its checksum.
func rawRow(seq int64, kind polyloop.RecordKind, data string) polyloop.Row {
	return polyloop.Row{Seq: seq, Kind: kind, Data: []byte(data), Checksum: crc32.Checksum([]byte(data), castagnoli)}
}

func callIntent(seq int64) polyloop.Record {
	return polyloop.Record{Seq: seq, At: time.Unix(1, 0).UTC(), Body: &polyloop.ModelCallIntent{Step: 1, CallID: "m1.1", Attempt: 1}}
}

// goodRows are n rows of model-call intents, seqs 0 … n-1.
func goodRows(t testing.TB, n int) []polyloop.Row {
	rows := make([]polyloop.Row, n)
	for i := range rows {
		rows[i] = rowOf(t, callIntent(int64(i)))
	}
	return rows
}

func readRows(rows ...polyloop.Row) (polyloop.RunLog, error) {
	return polyloop.ReadLog(context.Background(), &rowSink{rows: rows}, "r")
}

func TestReadLogReads(t *testing.T) {
	t.Parallel()
	rows := goodRows(t, 4)
	rows[3].Checksum, rows[3].Unchecked = 0, true // kept before the store kept checksums: read unchecked
	log, err := readRows(rows...)
	if err != nil || len(log.Records) != 4 || log.RunID != "r" || log.Records[3].Kind() != polyloop.KindModelCallIntent {
		t.Fatalf("log %+v, %v", log, err)
	}
	if log, err := readRows(); err != nil || !log.Empty() {
		t.Fatalf("no rows: %+v, %v; want an empty log", log, err)
	}
}

// TestReadLogCorruption: every damage to a row is a corrupt log at that
// row's seq, with the run and the kind named, and nothing of the log is
// returned.
func TestReadLogCorruption(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		damage func(r *polyloop.Row)
		seq    int64
		reason string
	}{
		{"flipped byte inside a string", func(r *polyloop.Row) { r.Data = bytes.Replace(r.Data, []byte(`"m1.1"`), []byte(`"M1.1"`), 1) },
			2, "checksum mismatch"},
		{"flipped byte, no checksum, invalid UTF-8", func(r *polyloop.Row) {
			r.Unchecked = true
			r.Data = bytes.Replace(r.Data, []byte(`"m1.1"`), []byte("\"m1\xff1\""), 1)
		}, 2, "invalid UTF-8 at byte"},
		{"checksum damaged", func(r *polyloop.Row) { r.Checksum ^= 1 }, 2, "checksum mismatch"},
		{"truncated data", func(r *polyloop.Row) { r.Data = r.Data[:len(r.Data)/2]; r.Unchecked = true }, 2, "does not decode"},
		{"record of another seq", func(r *polyloop.Row) {
			*r = rowOf(t, callIntent(3))
			r.Seq = 2
		}, 2, "record stored at seq 2 says seq 3"},
		{"seq gap", func(r *polyloop.Row) { r.Seq = 3 }, 3, "seq gap: record 2 is missing before it"},
		{"seq gap of two", func(r *polyloop.Row) { r.Seq = 4 }, 4, "seq gap: records 2 to 3 are missing before it"},
		{"seq again", func(r *polyloop.Row) { r.Seq = 1 }, 1, "record 1 is stored again after record 1"},
		{"kind lies", func(r *polyloop.Row) { r.Kind = polyloop.KindRunFinished }, 2, `stored as kind "run_finished" says kind "model_call_intent"`},
		{"no version field", func(r *polyloop.Row) {
			r.Data = bytes.Replace(r.Data, []byte(`,"v":1`), nil, 1)
			r.Unchecked = true
		}, 2, "no version field"},
		{"unknown kind", func(r *polyloop.Row) {
			r.Data = bytes.Replace(r.Data, []byte(`"model_call_intent"`), []byte(`"model_call_intend"`), 1)
			r.Unchecked = true
		}, 2, "unknown record kind"},
		{"neither bytes nor record", func(r *polyloop.Row) { r.Data = nil }, 2, "neither bytes nor a record"},
	}
	for _, tc := range tests {
		rows := goodRows(t, 3)
		tc.damage(&rows[2])
		log, err := readRows(rows...)
		var ce *polyloop.CorruptLogError
		if !errors.As(err, &ce) || ce.RunID != "r" || ce.Seq != tc.seq || ce.Kind == "" || !strings.Contains(ce.Reason, tc.reason) {
			t.Errorf("%s: %v, want a corrupt log of run r at seq %d, with its kind, saying %q", tc.name, err, tc.seq, tc.reason)
		}
		if err != nil && (strings.Contains(err.Error(), `""`) || strings.Contains(err.Error(), "()")) {
			t.Errorf("%s: the error leaves the run or the kind out: %v", tc.name, err)
		}
		if len(log.Records) != 0 {
			t.Errorf("%s: a damaged log gave %d records", tc.name, len(log.Records))
		}
	}
}

// A newer major version is no corruption: the error says ErrLogVersion and
// names the run and the seq.
func TestReadLogNewerVersion(t *testing.T) {
	t.Parallel()
	rows := append(goodRows(t, 3), rawRow(3, polyloop.KindRunStarted, `{"seq":3,"at":"2026-01-01T00:00:00Z","kind":"run_started","v":4}`))
	_, err := readRows(rows...)
	var ve *polyloop.LogVersionError
	if !errors.Is(err, polyloop.ErrLogVersion) || errors.Is(err, polyloop.ErrCorruptLog) || !errors.As(err, &ve) || ve.Seq != 3 ||
		!strings.Contains(err.Error(), `run "r": record 3`) {
		t.Errorf("a newer major version: %v, want a *LogVersionError naming run r and record 3, not corruption", err)
	}
}

// Version 2 is only for an action intent that leaves its action out for a
// tool call; on any other record it is corruption, not a newer version.
func TestReadLogVersion2ElsewhereIsCorrupt(t *testing.T) {
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
		_, err := readRows(append(goodRows(t, 3), rawRow(3, tc.kind, tc.data))...)
		var ce *polyloop.CorruptLogError
		if !errors.As(err, &ce) || ce.RunID != "r" || ce.Seq != 3 || ce.Kind != tc.kind || errors.Is(err, polyloop.ErrLogVersion) {
			t.Errorf("%s: %v, want a corrupt log at run r, record 3, not ErrLogVersion", tc.data, err)
		}
	}
}

// An action intent that refers to a tool call the log before it does not
// have is a corrupt log at its seq; one that it has reads back with the
// call as its action.
func TestReadLogResolvesToolCalls(t *testing.T) {
	t.Parallel()
	result := rawRow(3, polyloop.KindModelCallResult, `{"seq":3,"at":"2026-01-01T00:00:00Z","kind":"model_call_result","v":1,"step":1,"call_id":"m1.1","reply":{"tool_calls":[{"id":"c1","name":"t","args":{}}],"usage":{}}}`)
	ref := func(toolCall int, callID string) polyloop.Row {
		return rawRow(4, polyloop.KindActionIntent, fmt.Sprintf(`{"seq":4,"at":"2026-01-01T00:00:00Z","kind":"action_intent","v":2,"step":1,"action_id":"a1","attempt":1,"model_call_id":%q,"replay":"replay_safe","tool_call":%d}`, callID, toolCall))
	}
	for _, bad := range []polyloop.Row{ref(2, "m1.1"), ref(1, "m9.1")} {
		_, err := readRows(append(goodRows(t, 3), result, bad)...)
		var ce *polyloop.CorruptLogError
		if !errors.As(err, &ce) || ce.RunID != "r" || ce.Seq != 4 || ce.Kind != polyloop.KindActionIntent {
			t.Errorf("%s: %v, want a corrupt log at run r, record 4", bad.Data, err)
		}
	}
	log, err := readRows(append(goodRows(t, 3), result, ref(1, "m1.1"))...)
	if err != nil {
		t.Fatal(err)
	}
	if a := log.Records[4].Body.(*polyloop.ActionIntent).Action; a.CallID != "c1" || a.Tool != "t" || string(a.Args) != "{}" {
		t.Fatalf("the intent reads back with action %+v, want tool call 1", a)
	}
}

// A RecordKeeper's rows carry their records, which are read as they are,
// their seq and kind checked against the row's.
func TestReadLogTakesRecords(t *testing.T) {
	t.Parallel()
	rows := []polyloop.Row{{Seq: 0, Kind: polyloop.KindModelCallIntent, Record: callIntent(0)}, {Seq: 1, Kind: polyloop.KindModelCallIntent, Record: callIntent(1)}}
	if log, err := readRows(rows...); err != nil || len(log.Records) != 2 || log.Records[1].Body != rows[1].Record.Body {
		t.Fatalf("rows of records: %+v, %v", log, err)
	}
	rows[1].Record = callIntent(2)
	var ce *polyloop.CorruptLogError
	if _, err := readRows(rows...); !errors.As(err, &ce) || ce.Seq != 1 {
		t.Fatalf("a record that says another seq than its row: %v, want a corrupt log at seq 1", err)
	}
}

// FuzzReadLog: whatever bytes a row holds, with or without a checksum of
// its own, the reader never panics, and a row it refuses is a corrupt log at
// that row's seq, naming the run and the kind, or a newer major version.
func FuzzReadLog(f *testing.F) {
	for _, seed := range []string{`{"seq":1,"at":"2026-01-01T00:00:00Z","kind":"model_call_intent","v":1,"step":1,"call_id":"m1.1","attempt":1}`,
		`{"seq":1,"kind":"run_started","v":2}`, `{"seq":1}`, "\xff", `[[[`, `{"seq":1,"at":"x","kind":"step_completed","v":1,"step":"1"}`} {
		f.Add([]byte(seed), true)
		f.Add([]byte(seed), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, checksummed bool) {
		row := polyloop.Row{Seq: 1, Kind: polyloop.KindModelCallIntent, Data: data, Unchecked: !checksummed}
		if checksummed {
			row.Checksum = crc32.Checksum(data, castagnoli)
		}
		log, err := readRows(rowOf(t, callIntent(0)), row)
		var ce *polyloop.CorruptLogError
		switch {
		case err == nil:
			if len(log.Records) != 2 || log.Records[1].Seq != 1 {
				t.Fatalf("accepted row gives records %+v", log.Records)
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

// The Runner's chores before any Append, for every store (one that keeps
// bytes, and a RecordKeeper): an intent appended with the model result it
// refers to but holding another action is refused (ErrToolCallMismatch);
// a batch holding a record that does not encode (a NaN) is refused whole;
// seqs that are not consecutive are refused (ErrNotConsecutive). Nothing of
// a refused batch reaches the store; apart from its model result, such an
// intent is written and reads back with its own action.
func TestAppendRecordsRefusesBeforeTheStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	at := time.Unix(1, 0).UTC()
	reply := &polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{{ID: "call_1", Name: "echo", Args: []byte(`{"text":"hi"}`)}}}
	other := polyloop.Action{CallID: "call_1", Tool: "send", Args: []byte(`{"to":"x"}`)}
	result := polyloop.Record{Seq: 0, At: at, Body: &polyloop.ModelCallResult{Step: 1, CallID: "m1.1", Reply: reply}}
	intent := polyloop.Record{Seq: 1, At: at, Body: &polyloop.ActionIntent{Step: 1, ActionID: "a1", Attempt: 1, ModelCallID: "m1.1",
		Action: other, Replay: polyloop.ReplaySafe, ToolCall: 1}}
	nan := polyloop.Record{Seq: 1, At: at, Body: &polyloop.RunFinished{StopReason: polyloop.StopCompleted, Totals: polyloop.Totals{CostUSD: math.NaN()}}}
	for name, newStore := range map[string]func() polyloop.Store{
		"bytes":   func() polyloop.Store { return &countingRows{} },
		"records": func() polyloop.Store { return memstore.New() },
	} {
		for what, tc := range map[string]struct {
			recs []polyloop.Record
			want error
		}{
			"tool call mismatch": {[]polyloop.Record{result, intent}, polyloop.ErrToolCallMismatch},
			"not consecutive":    {[]polyloop.Record{result, {Seq: 2, At: at, Body: intent.Body}}, polyloop.ErrNotConsecutive},
		} {
			s := newStore()
			if err := polyloop.AppendRecords(ctx, s, "r", tc.recs...); !errors.Is(err, tc.want) {
				t.Errorf("%s, %s: %v, want %v", name, what, err, tc.want)
			}
			if rows, _ := s.ReadRows(ctx, "r"); len(rows) != 0 {
				t.Errorf("%s, %s: %d rows reached the store", name, what, len(rows))
			}
		}
		s := newStore()
		if err := polyloop.AppendRecords(ctx, s, "r", callIntent(0), nan); err == nil {
			t.Errorf("%s: a batch with a NaN was appended", name)
		}
		if rows, _ := s.ReadRows(ctx, "r"); len(rows) != 0 {
			t.Errorf("%s: %d rows of a batch with a NaN reached the store", name, len(rows))
		}
		s = newStore()
		if err := polyloop.AppendRecords(ctx, s, "r", result); err != nil {
			t.Fatal(err)
		}
		if err := polyloop.AppendRecords(ctx, s, "r", intent); err != nil {
			t.Fatalf("%s: the intent apart from its result: %v", name, err)
		}
		log, err := polyloop.ReadLog(ctx, s, "r")
		if err != nil || len(log.Records) != 2 || !log.Records[1].Body.(*polyloop.ActionIntent).Action.Equal(other) {
			t.Fatalf("%s: the intent written apart reads back as %+v, %v; want its own action", name, log.Records, err)
		}
	}
}
