package polyloop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop/diag"
)

// reflectedRecord is the encoding of a record by encoding/json, as the
// library wrote records before appendRecord (with the action of an intent
// that is a tool call left out, as since 1.2): the reference appendRecord is
// held to.
func reflectedRecord(r Record, ref bool) ([]byte, error) {
	if r.Body == nil {
		return nil, fmt.Errorf("polyloop: record %d has no body", r.Seq)
	}
	if _, err := json.Marshal(r.At.UTC()); err != nil {
		return nil, err // the envelope's time, as encoding/json would refuse it
	}
	var enc bytes.Buffer
	e := json.NewEncoder(&enc)
	e.SetEscapeHTML(false)
	body := r.Body
	version := 1
	if in, ok := body.(*ActionIntent); ok && ref {
		version = 2
		c := *in
		c.Action = Action{} // the log leaves out an action that is a tool call
		body = &c
	}
	if err := e.Encode(body); err != nil {
		return nil, err
	}
	fields := bytes.TrimRight(enc.Bytes(), "\n")
	if ref {
		fields = bytes.Replace(fields, []byte(`"action":{},`), nil, 1)
	}
	buf := []byte(`{"seq":` + strconv.FormatInt(r.Seq, 10) + `,"at":"` + r.At.UTC().Format(time.RFC3339Nano) +
		`","kind":"` + string(r.Body.Kind()) + `","v":` + strconv.Itoa(version))
	if len(fields) > 2 {
		return append(append(buf, ','), fields[1:]...), nil
	}
	return append(buf, '}'), nil
}

// storedLines returns the records of every stored log of testdata.
func storedLines(t *testing.T) [][]byte {
	t.Helper()
	paths, _ := filepath.Glob("testdata/*.jsonl")
	more, _ := filepath.Glob("testdata/logs/*.jsonl")
	var lines [][]byte
	for _, p := range append(paths, more...) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			lines = append(lines, l)
		}
	}
	if len(lines) < 50 {
		t.Fatalf("only %d stored records in testdata", len(lines))
	}
	return lines
}

// checkEncoding holds appendRecord to encoding/json for r: the same bytes
// (or both refusing), and the bytes decode, both ways, to the same record.
func checkEncoding(t *testing.T, r Record) {
	t.Helper()
	ref, err := referToToolCall(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	want, werr := reflectedRecord(r, ref)
	got, gerr := appendRecord([]byte("prefix"), r, ref)
	if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
		t.Fatalf("record %+v: encoding/json says %v, appendRecord %v", r, werr, gerr)
	}
	if werr != nil {
		if string(got) != "prefix" {
			t.Fatalf("appendRecord refused and left %q", got)
		}
		return
	}
	if !bytes.Equal(got[len("prefix"):], want) {
		t.Fatalf("appendRecord:\n%s\nencoding/json:\n%s", got[len("prefix"):], want)
	}
	checkDecoding(t, want, true)
}

// checkDecoding holds decodeStep to the generic decoder for data: what it
// decodes, the generic way decodes to the same record. canonical says data
// is the library's own encoding of a record, which decodeStep must decode
// when it is of a step's kind.
func checkDecoding(t *testing.T, data []byte, canonical bool) {
	t.Helper()
	var slow Record
	_, serr := slow.unmarshalGeneric(data)
	fast, ok := decodeStep(data)
	if ok {
		if serr != nil {
			t.Fatalf("decodeStep accepts %q, the generic decoder says %v", data, serr)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q decodes to\n%#v\nthe generic way to\n%#v", data, fast.Body, slow.Body)
		}
	}
	if canonical && serr == nil && !ok && stepKind(slow.Kind()) {
		t.Fatalf("decodeStep does not decode the library's own %s record %q", slow.Kind(), data)
	}
}

func stepKind(k RecordKind) bool {
	switch k {
	case KindModelCallIntent, KindModelCallResult, KindActionIntent, KindStepCompleted, KindActionResult:
		return true
	}
	return false
}

// TestRecordEncoderMatchesReflection: every stored record of testdata and
// records generated over every kind a step writes encode to the bytes
// encoding/json gives, and decode back, in one pass, to the same record.
func TestRecordEncoderMatchesReflection(t *testing.T) {
	for _, line := range storedLines(t) {
		var r Record
		if _, err := r.unmarshalGeneric(line); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		checkEncoding(t, r)
		checkDecoding(t, line, true)
	}
	rng := rand.New(rand.NewPCG(25, 26))
	for range 3000 {
		checkEncoding(t, genRecord(rng))
	}
	// Every kind, every field set at random: a field added to a kind that
	// the encoder does not write fails here.
	for range 300 {
		for _, k := range allKinds {
			body := newBody(k)
			fillRandom(rng, reflect.ValueOf(body).Elem(), 0)
			checkEncoding(t, Record{Seq: rng.Int64N(1 << 20), At: time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)), Body: body})
		}
	}
}

var allKinds = []RecordKind{KindRunStarted, KindModelCallIntent, KindModelCallResult, KindActionIntent, KindStepCompleted,
	KindRunFinished, KindConfigOverride, KindChildReception, KindActionResult, KindApprovalRequested, KindApprovalDecided,
	KindDeliveryRequested, KindDeliveryReceived, KindLeaseTakeover, KindMaintenanceOp, KindMaintenanceDone}

// fillRandom sets every exported field of v at random: texts from
// textPieces, JSON from jsonTexts, pointers, slices and maps nil, empty or
// filled.
func fillRandom(rng *rand.Rand, v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(genText(rng))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(rng.IntN(5) - 1))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(rng.IntN(4)))
	case reflect.Float32, reflect.Float64:
		v.SetFloat([]float64{0, 1e-7, 0.5, 1e21, -3.25}[rng.IntN(5)])
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.Pointer:
		if depth < 4 && rng.IntN(3) > 0 {
			p := reflect.New(v.Type().Elem())
			fillRandom(rng, p.Elem(), depth+1)
			v.Set(p)
		}
	case reflect.Slice:
		if v.Type() == reflect.TypeOf(json.RawMessage(nil)) {
			v.SetBytes(genJSON(rng))
			return
		}
		if depth >= 4 || rng.IntN(3) == 0 {
			return
		}
		n := rng.IntN(3)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fillRandom(rng, s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		if depth >= 4 || rng.IntN(3) == 0 {
			return
		}
		m := reflect.MakeMap(v.Type())
		for range rng.IntN(3) {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fillRandom(rng, k, depth+1)
			fillRandom(rng, e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).UTC()))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillRandom(rng, v.Field(i), depth)
			}
		}
	}
}

// TestRecordEncoderRefusals: what encoding/json refuses, appendRecord
// refuses with the same error.
func TestRecordEncoderRefusals(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, b := range []RecordBody{
		&ActionIntent{Step: 1, ActionID: "a", Attempt: 1, ModelCallID: "m", Action: Action{Tool: "t", Args: json.RawMessage(`{"a":`)}, Replay: ReplaySafe},
		&ModelCallResult{Step: 1, CallID: "m", Reply: &ModelReply{ToolCalls: []ToolCall{{Name: "t", Args: json.RawMessage(`nope`)}}}},
		&ModelCallResult{Step: 1, CallID: "m", Reply: &ModelReply{Usage: Usage{CostUSD: &nan}}},
		&ModelCallResult{Step: 1, CallID: "m", Failure: &diag.Diagnostic{Type: "x"}, Usage: &Usage{CostUSD: &inf}},
		&ChildReception{Step: 1, Index: 0, ChildRunID: "c", Reception: ReceptionHandled, Value: json.RawMessage(`[1,`)},
	} {
		r := Record{Seq: 3, At: time.Unix(0, 0), Body: b}
		if _, err := appendRecord(nil, r, false); err == nil {
			t.Fatalf("%T %+v encodes", b, b)
		}
		checkEncoding(t, r)
	}
	if _, err := appendRecord(nil, Record{Seq: 4}, false); err == nil {
		t.Fatal("a record without a body encodes")
	}
}

// TestRecordDecoderFallsBack: texts the one-pass decoder leaves to the
// generic one, which gives the verdict.
func TestRecordDecoderFallsBack(t *testing.T) {
	base := `{"seq":2,"at":"2026-11-30T12:00:00Z","kind":"model_call_intent","v":1,"step":1,"call_id":"m1.1","attempt":1`
	for _, data := range []string{
		base + `,"Step":2}`,           // a key matched without its case
		base + `,"step":2}`,           // a repeated key
		base + `,"view":null}`,        // null
		base + `,"call_id":"\u006d"}`, // a \u escape
		base + `,"extra":1}`,          // an unknown key
		base + `}x`,                   // trailing text
		base,                          // cut short
		strings.Replace(base, `1,"call`, `1.0,"call`, 1) + `}`, // a float for an int
		strings.Replace(base, `"v":1`, `"v":2`, 1) + `}`,       // a newer version
		strings.Replace(base, `"v":1`, `"v":0`, 1) + `}`,       // no version
		`{"seq": 2,"at":"2026-11-30T12:00:00Z","kind":"model_call_intent","v":1,"step":1,"call_id":"m","attempt":1}`,
		// causes nested deeper than encoding/json reads
		`{"seq":2,"at":"2026-11-30T12:00:00Z","kind":"model_call_result","v":1,"step":1,"call_id":"m","failure":` +
			strings.Repeat(`{"type":"t","message":"m","causes":[`, 20000) + `{"type":"t","message":"m"}` + strings.Repeat(`]}`, 20000) + `}`,
	} {
		if _, ok := decodeStep([]byte(data)); ok {
			t.Errorf("decodeStep decodes %s", data)
		}
		checkDecoding(t, []byte(data), false)
	}
}

// FuzzRecordDecoding: whatever the text, what the one-pass decoder decodes,
// the generic decoder decodes to the same record; and a record that decodes
// encodes, by appendRecord, to encoding/json's bytes.
func FuzzRecordDecoding(f *testing.F) {
	data, err := os.ReadFile("testdata/reference.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		f.Add(l)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		r := genRecord(rng)
		ref, _ := referToToolCall(nil, r)
		b, err := appendRecord(nil, r, ref)
		if err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecoding(t, data, false)
		var r Record
		if ref, err := r.unmarshalGeneric(data); err == nil && ref == "" {
			checkEncoding(t, r)
		}
	})
}

// genRecord returns a random record of one of the kinds a step writes,
// with texts that exercise every escape.
func genRecord(rng *rand.Rand) Record {
	r := Record{Seq: rng.Int64N(1 << 40), At: time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).In(time.FixedZone("x", 3600))}
	switch rng.IntN(5) {
	case 0:
		b := &ModelCallIntent{Step: rng.IntN(100), CallID: genText(rng), Attempt: rng.IntN(3)}
		if rng.IntN(2) == 0 {
			b.View = &ViewRef{Name: genText(rng), Version: rng.Int64N(10) - 1}
		}
		r.Body = b
	case 1:
		b := &ModelCallResult{Step: rng.IntN(100), CallID: genText(rng), Attempt: rng.IntN(3)}
		if rng.IntN(3) > 0 {
			b.Reply = &ModelReply{Text: genText(rng), Usage: genUsage(rng), Model: genText(rng), FinishReason: genText(rng), Attempts: rng.IntN(3), RequestID: genText(rng)}
			for range rng.IntN(4) {
				b.Reply.ToolCalls = append(b.Reply.ToolCalls, ToolCall{ID: genText(rng), Name: genText(rng), Args: genJSON(rng)})
			}
			if rng.IntN(5) == 0 {
				b.Reply.ToolCalls = []ToolCall{}
			}
		} else {
			b.Failure = genDiagnostic(rng, 2)
			if rng.IntN(2) == 0 {
				u := genUsage(rng)
				b.Usage = &u
			}
		}
		r.Body = b
	case 2:
		b := &ActionIntent{Step: rng.IntN(100), ActionID: genText(rng), Attempt: rng.IntN(3), ModelCallID: genText(rng),
			Action: Action{CallID: genText(rng), Tool: genText(rng), Args: genJSON(rng), Code: genText(rng), Lang: genText(rng)},
			Replay: ReplayPolicy(genText(rng)), Index: rng.IntN(3), Of: rng.IntN(4)}
		if rng.IntN(2) == 0 {
			b.Action, b.ToolCall = Action{}, 1+rng.IntN(3)
		}
		r.Body = b
	case 3:
		r.Body = &StepCompleted{Step: rng.IntN(100), ModelCallID: genText(rng), Decision: DecisionKind(genText(rng)),
			Feedback: genText(rng), Answer: genText(rng), SettledAction: genSettled(rng)}
	default:
		r.Body = &ActionResult{Step: rng.IntN(100), SettledAction: genSettled(rng)}
	}
	return r
}

func genSettled(rng *rand.Rand) SettledAction {
	s := SettledAction{ResultID: genText(rng), Attempt: rng.IntN(3), Observation: genText(rng), Synthetic: rng.IntN(2) == 0,
		TruncatedChars: rng.IntN(3), Audit: genText(rng)}
	if rng.IntN(3) > 0 {
		s.Outcome = &StepOutcome{Status: ActionStatus(genText(rng)), Done: rng.IntN(2) == 0, ExecutorTruncated: rng.IntN(3)}
	}
	return s
}

func genUsage(rng *rand.Rand) Usage {
	u := Usage{InputTokens: rng.Int64N(3) * rng.Int64(), OutputTokens: rng.Int64N(1000), CachedTokens: rng.Int64N(2), ReasoningTokens: -rng.Int64N(2), TokensUnknown: rng.IntN(2) == 0}
	if rng.IntN(2) == 0 {
		c := []float64{0, 1e-7, 0.000123, 1.5, 1e21, 123456789.125, -2.5e-9, rng.Float64()}[rng.IntN(8)]
		u.CostUSD = &c
	}
	return u
}

func genDiagnostic(rng *rand.Rand, depth int) *diag.Diagnostic {
	d := &diag.Diagnostic{Type: genText(rng), Message: genText(rng), Truncated: rng.IntN(2) == 0}
	if rng.IntN(2) == 0 {
		d.Fields = map[string]string{}
		for range rng.IntN(4) {
			d.Fields[genText(rng)] = genText(rng)
		}
	}
	if depth > 0 {
		for range rng.IntN(3) {
			d.Causes = append(d.Causes, *genDiagnostic(rng, depth-1))
		}
	}
	return d
}

// pieces of text: plain, escaped, HTML, non-ASCII, invalid UTF-8, the
// separators JSON escapes.
var textPieces = []string{"", "a", "call_1", "noop", " ", `"`, `\`, "\n", "\t", "\r", "\b", "\f", "\x00", "\x1f", "<b>&amp;</b>",
	"é", "日本", "😀", "\u2028", "\u2029", "\xff", "\xe2\x80", "/", "\x7f"}

func genText(rng *rand.Rand) string {
	var b strings.Builder
	for range rng.IntN(5) {
		b.WriteString(textPieces[rng.IntN(len(textPieces))])
	}
	return b.String()
}

// genJSON returns empty arguments or valid JSON, compact or spaced.
var jsonTexts = []string{"", `{}`, `{"i":1,"note":"a note"}`, `{ "i" : 1 ,
 "note" : "a  note" }`, `[1, 2.5, -3e4, true, false, null]`, `"text"`, `{"html":"<a>&"}`, `{"s":"\u2028\n\"\\"}`, `{"a":{"b":[{}]}}`, `12`}

func genJSON(rng *rand.Rand) json.RawMessage {
	s := jsonTexts[rng.IntN(len(jsonTexts))]
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// A record whose time is past year 9999 (or before year 0), which RFC 3339
// cannot write and so would never read back, is refused with encoding/json's
// error; year 9999 encodes and reads back.
func TestRecordTimeOutOfRange(t *testing.T) {
	body := &ModelCallIntent{Step: 1, CallID: "m1.1", Attempt: 1}
	for _, at := range []time.Time{
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 0, 0, 0, time.FixedZone("x", -3600)), // year 10000 in UTC
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		_, want := json.Marshal(at.UTC())
		if want == nil {
			t.Fatalf("encoding/json encodes %v", at)
		}
		r := Record{Seq: 1, At: at, Body: body}
		if _, err := r.MarshalJSON(); err == nil || err.Error() != want.Error() {
			t.Errorf("a record at %v encodes: %v, want %v", at, err, want)
		}
		for _, encode := range []bool{true, false} {
			if _, _, err := rowsOf("r", []Record{r}, rowOpts{encode: encode}, nil, nil); err == nil || !strings.Contains(err.Error(), want.Error()) {
				t.Errorf("the rows (encoded %v) of a record at %v: %v, want %v", encode, at, err, want)
			}
		}
		checkEncoding(t, r)
	}
	r := Record{Seq: 1, At: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), Body: body}
	data, err := r.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var back Record
	if err := back.UnmarshalJSON(data); err != nil || !back.At.Equal(r.At) {
		t.Fatalf("a record of year 9999 reads back at %v: %v", back.At, err)
	}
}
