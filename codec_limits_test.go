package polyloop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
)

// nested is n arrays, one inside the other, around inner.
func nested(n int, inner string) string {
	return strings.Repeat("[", n) + inner + strings.Repeat("]", n)
}

func TestCheckJSONLimits(t *testing.T) {
	t.Parallel()
	max := polyloop.MaxJSONDepth
	tests := []struct {
		name  string
		in    string
		limit polyloop.JSONLimit // "" for no error
		at    int
	}{
		{"flat", `{"a":1,"b":[1,2,{"c":"d"}]}`, "", 0},
		{"at the limit", nested(max, "1"), "", 0},
		{"one too deep", nested(max+1, "1"), polyloop.LimitDepth, max},
		{"objects count", strings.Repeat(`{"a":`, max+1) + "1" + strings.Repeat("}", max+1), polyloop.LimitDepth, 5 * max},
		{"brackets in strings do not count", `["` + strings.Repeat("[{", 2*max) + `"]`, "", 0},
		{"escaped quote stays in the string", `["\"` + strings.Repeat("[", 2*max) + `"]`, "", 0},
		{"escaped backslash ends before the quote", `["\\",` + nested(max, "") + `]`, polyloop.LimitDepth, max + 5},
		{"siblings do not add up", "[" + strings.Repeat(nested(max-1, "")+",", 3) + "1]", "", 0},
		{"invalid UTF-8 in a string", "{\"a\":\"ok\xffx\"}", polyloop.LimitUTF8, 8},
		{"truncated UTF-8 sequence", "[\"\xe2\x82\"]", polyloop.LimitUTF8, 2},
		{"valid UTF-8", `["héllo, 世界, \u2028"]`, "", 0},
		{"unterminated string", `["abc`, "", 0},
	}
	for _, tc := range tests {
		err := polyloop.CheckJSONLimits([]byte(tc.in))
		if tc.limit == "" {
			if err != nil {
				t.Errorf("%s: %v, want nil", tc.name, err)
			}
			continue
		}
		var le *polyloop.JSONLimitError
		if !errors.As(err, &le) || !errors.Is(err, polyloop.ErrJSONLimit) || le.Limit != tc.limit || le.Offset != tc.at {
			t.Errorf("%s: %v (%+v), want a %s error at byte %d", tc.name, err, le, tc.limit, tc.at)
		}
	}
}

func TestCheckJSONLimitsSize(t *testing.T) {
	t.Parallel()
	big := make([]byte, polyloop.MaxRecordBytes+1)
	big[0], big[len(big)-1] = '"', '"'
	for i := 1; i < len(big)-1; i++ {
		big[i] = 'a'
	}
	var le *polyloop.JSONLimitError
	if err := polyloop.CheckJSONLimits(big); !errors.As(err, &le) || le.Limit != polyloop.LimitSize {
		t.Errorf("a %d-byte string: %v, want a size error", len(big), err)
	}
	if err := polyloop.CheckJSONLimits(big[1 : len(big)-1]); err != nil {
		t.Errorf("%d bytes: %v, want nil", len(big)-2, err)
	}
}

// TestRecordLimitsAreReadable: a record at the deepest nesting
// CheckRecordLimits accepts decodes, so the limit is one the reader keeps.
func TestRecordLimitsAreReadable(t *testing.T) {
	t.Parallel()
	rec := []byte(`{"seq":1,"at":"2026-01-01T00:00:00Z","kind":"action_intent","v":1,"step":1,"action_id":"a1","attempt":1,` +
		`"model_call_id":"m1.1","action":{"tool":"t","args":` + nested(polyloop.MaxRecordDepth-2, "") + `},"replay":"replay_safe"}`)
	if err := polyloop.CheckRecordLimits(rec); err != nil {
		t.Fatalf("record at the deepest nesting: %v", err)
	}
	var r polyloop.Record
	if err := r.UnmarshalJSON(rec); err != nil {
		t.Fatalf("a record CheckRecordLimits accepts does not decode: %v", err)
	}
	if err := polyloop.CheckRecordLimits(bytes.Replace(rec, []byte(`"args":[`), []byte(`"args":[[`), 1)); err == nil {
		t.Fatal("a record one level deeper was accepted")
	}
}

// jsonDepth is the nesting depth of valid JSON, by encoding/json's tokens.
func jsonDepth(b []byte) int {
	dec := json.NewDecoder(bytes.NewReader(b))
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return deepest
		}
		if err != nil {
			return -1
		}
		switch tok {
		case json.Delim('['), json.Delim('{'):
			depth++
			deepest = max(deepest, depth)
		case json.Delim(']'), json.Delim('}'):
			depth--
		}
	}
}

// FuzzCheckJSONLimits: the checker's verdict on valid JSON wrapped to the
// limit and one level past it is encoding/json's (the wrapping makes the
// checker scan rather than count); and it never panics on anything.
func FuzzCheckJSONLimits(f *testing.F) {
	for _, s := range limitSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = polyloop.CheckJSONLimits(b)
		if !json.Valid(b) || !utf8.Valid(b) {
			return
		}
		checkAtTheLimit(t, string(b))
	})
}

var limitSeeds = []string{`{"a":[1,{"b":"[\"]"}]}`, `["\\\\",[[]]]`, `"\u005b"`, nested(5, `"}"`), `[{}, [[]], "x"]`, `{"a\\":{"b":[]}}`}

// checkAtTheLimit wraps s, valid JSON of depth d, in arrays to MaxJSONDepth
// levels (accepted) and to one more (refused at the outermost bracket of s
// or of its wrapping).
func checkAtTheLimit(t *testing.T, s string) {
	t.Helper()
	d := jsonDepth([]byte(s))
	if d < 0 || d > polyloop.MaxJSONDepth {
		return
	}
	if err := polyloop.CheckJSONLimits([]byte(nested(polyloop.MaxJSONDepth-d, s))); err != nil {
		t.Errorf("%s wrapped to the limit: %v", s, err)
	}
	err := polyloop.CheckJSONLimits([]byte(nested(polyloop.MaxJSONDepth-d+1, s)))
	var le *polyloop.JSONLimitError
	if !errors.As(err, &le) || le.Limit != polyloop.LimitDepth {
		t.Errorf("%s wrapped one level past the limit: %v", s, err)
	}
}

// TestCheckJSONLimitsMatchesDecoder runs the fuzz property on its seeds.
func TestCheckJSONLimitsMatchesDecoder(t *testing.T) {
	t.Parallel()
	for _, s := range limitSeeds {
		checkAtTheLimit(t, s)
	}
}

// TestAppendRefusesWhatWouldNotRead: the last guard before a store writes,
// for every store: a record beyond the limits is refused with an error
// naming the run, the seq and the kind, and nothing reaches the store —
// one that keeps bytes, or a RecordKeeper (memstore), which is checked
// without its bytes.
func TestAppendRefusesWhatWouldNotRead(t *testing.T) {
	t.Parallel()
	intent := func(args string) polyloop.Record {
		return polyloop.Record{Seq: 1, At: time.Unix(1, 0), Body: &polyloop.ActionIntent{Step: 1, ActionID: "a1", Attempt: 1,
			ModelCallID: "m1.1", Action: polyloop.Action{Tool: "t", Args: json.RawMessage(args)}, Replay: polyloop.ReplaySafe}}
	}
	ok := polyloop.Record{Seq: 0, At: time.Unix(1, 0), Body: &polyloop.ModelCallIntent{Step: 1, CallID: "m1.1", Attempt: 1}}
	for name, s := range map[string]polyloop.Store{"bytes": &countingRows{}, "records": memstore.New()} {
		if err := polyloop.AppendRecords(context.Background(), s, "r", ok, intent(nested(polyloop.MaxJSONDepth, ""))); err != nil {
			t.Fatalf("%s: arguments at MaxJSONDepth: %v", name, err)
		}
		for what, args := range map[string]string{
			"10000 levels":  nested(10000, ""),
			"invalid UTF-8": "[\"\xff\"]",
		} {
			next := ok
			next.Seq = 2
			bad := intent(args)
			bad.Seq = 3
			err := polyloop.AppendRecords(context.Background(), s, "r", next, bad)
			if !errors.Is(err, polyloop.ErrJSONLimit) || !strings.Contains(err.Error(), `run "r": record 3 (action_intent)`) {
				t.Errorf("%s, %s: %v, want ErrJSONLimit naming run r, record 3 and its kind", name, what, err)
			}
			if log, _ := polyloop.ReadLog(context.Background(), s, "r"); len(log.Records) != 2 {
				t.Errorf("%s, %s: the store holds %d records, want the 2 before the refused Append", name, what, len(log.Records))
			}
		}
	}
}

// countingRows is a store that keeps rows (their bytes) in memory.
type countingRows struct{ rows []polyloop.Row }

func (s *countingRows) Append(_ context.Context, _ string, rows []polyloop.Row) error {
	if rows[0].Seq != int64(len(s.rows)) {
		return polyloop.ErrSeqConflict
	}
	for _, r := range rows {
		r.Data = slices.Clone(r.Data)
		s.rows = append(s.rows, r)
	}
	return nil
}

func (s *countingRows) ReadRows(context.Context, string) ([]polyloop.Row, error) { return s.rows, nil }

func (s *countingRows) ReadRowsFrom(_ context.Context, _ string, from int64, limit int) ([]polyloop.Row, error) {
	return rowsFrom(s.rows, from, limit), nil
}

func BenchmarkCheckRecordLimits(b *testing.B) {
	rec := polyloop.Record{Seq: 3, At: time.Unix(1, 0), Body: &polyloop.ModelCallResult{Step: 1, CallID: "m1.1", Reply: &polyloop.ModelReply{
		Text:      strings.Repeat("I will call the noop tool to make progress. ", 5),
		ToolCalls: []polyloop.ToolCall{{ID: "call_1", Name: "noop", Args: json.RawMessage(`{"i":1,"note":"a note of fifty characters a note of fifty charact"}`)}},
		Usage:     polyloop.Usage{InputTokens: 100, OutputTokens: 60}, Model: "script-1"}}}
	data, err := rec.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if err := polyloop.CheckRecordLimits(data); err != nil {
			b.Fatal(err)
		}
	}
}

// TestValidText: the text is what a record reads back.
func TestValidText(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"plain", "héllo", "a\xffb", "\xc0\x80\x80", "x\xe2\x82", "\xff\xfe\xfd", ""} {
		got := polyloop.ValidText(s)
		enc, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back string
		if err := json.Unmarshal(enc, &back); err != nil {
			t.Fatal(err)
		}
		if got != back || !utf8.ValidString(got) {
			t.Errorf("ValidText(%q) = %q, the log keeps %q", s, got, back)
		}
	}
}

// A tool's parameter schema is outside data (an MCP server's tools/list, an
// agent file): it is checked against the log's limits where the agent's
// tools are validated, so a schema nested deeper than MaxJSONDepth is an
// ErrInvalidConfig naming the tool, before anything is written — not a
// store failure on run_started. A schema at the limit runs.
func TestToolSchemaLimits(t *testing.T) {
	t.Parallel()
	schema := func(depth int) json.RawMessage {
		return json.RawMessage(strings.Repeat(`{"a":`, depth-1) + `{}` + strings.Repeat("}", depth-1))
	}
	run := func(depth int) (*memstore.Store, error) {
		agent := testAgent()
		agent.Tools = append(agent.Tools, polyloop.ToolSpec{Name: "deep", Parameters: schema(depth), Replay: polyloop.ReplaySafe})
		store := memstore.New()
		_, err := newRunner(scriptmodel.New(scriptmodel.Reply("a")), store, newTestExec()).Run(context.Background(), "r", agent, polyloop.Task{Input: "t"})
		return store, err
	}
	store, err := run(polyloop.MaxJSONDepth + 1)
	if !errors.Is(err, polyloop.ErrInvalidConfig) || !errors.Is(err, polyloop.ErrJSONLimit) || !strings.Contains(err.Error(), `"deep"`) {
		t.Fatalf("a schema %d levels deep: %v; want ErrInvalidConfig and ErrJSONLimit naming the tool", polyloop.MaxJSONDepth+1, err)
	}
	if store.Len() != 0 {
		t.Errorf("%d records written for a refused configuration", store.Len())
	}
	if _, err := run(polyloop.MaxJSONDepth); err != nil {
		t.Errorf("a schema at the limit: %v", err)
	}
}
