package polyloop

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeStep decodes, in one pass, a record of a step's kinds
// (model_call_intent, model_call_result, action_intent, step_completed,
// action_result) as appendRecord writes it: the envelope first, in its
// order, then the body's fields in any order, each at most once, with their
// exact names. It reports false for anything else — another kind, other
// spacing in the envelope, an unknown, repeated or null field, a string
// that is not UTF-8, a number that is not a plain integer where one is due,
// JSON that is not valid — and the caller decodes the record the generic
// way, which gives the verdict and the error. What it accepts, the generic
// way decodes to the same record (FuzzRecordDecoding holds it to that).
func decodeStep(data []byte) (Record, bool) {
	d := decoder{data: data}
	seq, at, kind, v, ok := d.envelope()
	if !ok {
		return Record{}, false
	}
	var body RecordBody
	switch kind {
	case KindModelCallIntent:
		b := &ModelCallIntent{}
		body, ok = b, d.object(true, b.field)
	case KindModelCallResult:
		b := &ModelCallResult{}
		body, ok = b, d.object(true, b.field)
	case KindActionIntent:
		b := &ActionIntent{}
		body, ok = b, d.object(true, b.field)
	case KindStepCompleted:
		b := &StepCompleted{}
		body, ok = b, d.object(true, b.field)
	case KindActionResult:
		b := &ActionResult{}
		body, ok = b, d.object(true, b.field)
	default:
		return Record{}, false
	}
	if !ok || !d.end() || v > 2 || (v == 2 && !leavesOutAction(body)) {
		return Record{}, false
	}
	return Record{Seq: seq, At: at, Body: body}, true
}

// decoder reads JSON from data at i. Its methods report false at anything
// they do not read, leaving i anywhere.
type decoder struct {
	data []byte
	i    int
	// seen holds the bits of the fields read in the current object.
	seen uint64
}

// envelope reads `{"seq":N,"at":"T","kind":"K","v":V` exactly, as
// fastEnvelope does, with V a version this library reads.
func (d *decoder) envelope() (seq int64, at time.Time, kind RecordKind, v int64, ok bool) {
	if !d.literal(`{"seq":`) {
		return
	}
	if seq, ok = d.int64(); !ok || !d.literal(`,"at":"`) {
		return 0, at, "", 0, false
	}
	t, ok := d.plainString()
	if !ok || !d.literal(`,"kind":"`) {
		return 0, at, "", 0, false
	}
	if at, ok = parseTime(t); !ok {
		return 0, at, "", 0, false
	}
	k, ok := d.plainString()
	if !ok || !d.literal(`,"v":`) {
		return 0, at, "", 0, false
	}
	if v, ok = d.int64(); !ok || v < 1 || v > MaxRecordVersion {
		return 0, at, "", 0, false
	}
	return seq, at, RecordKind(k), v, true
}

func parseTime(b []byte) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, string(b))
	return t, err == nil
}

// end reports whether only whitespace is left.
func (d *decoder) end() bool {
	d.space()
	return d.i == len(d.data)
}

func (d *decoder) space() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) literal(s string) bool {
	if len(d.data)-d.i < len(s) || string(d.data[d.i:d.i+len(s)]) != s {
		return false
	}
	d.i += len(s)
	return true
}

// plainString reads the rest of a string whose opening quote is read, up
// to its closing quote: printable ASCII without escapes only.
func (d *decoder) plainString() ([]byte, bool) {
	for j := d.i; j < len(d.data); j++ {
		c := d.data[j]
		if c == '"' {
			s := d.data[d.i:j]
			d.i = j + 1
			return s, true
		}
		if c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
			return nil, false
		}
	}
	return nil, false
}

// object reads the members of an object, calling field for each with its
// key; field reads the value and reports false for a key it does not know.
// open says the opening brace is read and one member may already have
// been (the record's envelope).
func (d *decoder) object(open bool, field func(d *decoder, key []byte) bool) bool {
	saved := d.seen
	d.seen = 0
	defer func() { d.seen = saved }()
	first := !open
	if !open {
		d.space()
		if !d.literal("{") {
			return false
		}
	}
	for {
		d.space()
		if d.i >= len(d.data) {
			return false
		}
		if d.data[d.i] == '}' {
			d.i++
			return true
		}
		if !first {
			if d.data[d.i] != ',' {
				return false
			}
			d.i++
			d.space()
		}
		first = false
		key, ok := d.text()
		if !ok {
			return false
		}
		d.space()
		if !d.literal(":") {
			return false
		}
		d.space()
		if !field(d, key) {
			return false
		}
	}
}

// once marks field bit n seen, false if it already was.
func (d *decoder) once(n uint) bool {
	if d.seen&(1<<n) != 0 {
		return false
	}
	d.seen |= 1 << n
	return true
}

// int64 reads an integer in JSON's syntax, without fraction or exponent.
func (d *decoder) int64() (int64, bool) {
	j := d.i
	if j < len(d.data) && d.data[j] == '-' {
		j++
	}
	digits := j
	for j < len(d.data) && d.data[j] >= '0' && d.data[j] <= '9' {
		j++
	}
	n := j - digits
	if n == 0 || n > 19 || (n > 1 && d.data[digits] == '0') {
		return 0, false
	}
	if j < len(d.data) && (d.data[j] == '.' || d.data[j] == 'e' || d.data[j] == 'E') {
		return 0, false
	}
	v, err := strconv.ParseInt(string(d.data[d.i:j]), 10, 64)
	d.i = j
	return v, err == nil
}

func (d *decoder) int() (int, bool) {
	v, ok := d.int64()
	return int(v), ok
}

// float reads a number in JSON's syntax as encoding/json does.
func (d *decoder) float() (float64, bool) {
	j := d.i
	if j < len(d.data) && d.data[j] == '-' {
		j++
	}
	digits := j
	for j < len(d.data) && isDigit(d.data[j]) {
		j++
	}
	if j == digits || (j-digits > 1 && d.data[digits] == '0') {
		return 0, false
	}
	if j < len(d.data) && d.data[j] == '.' {
		j++
		k := j
		for j < len(d.data) && isDigit(d.data[j]) {
			j++
		}
		if j == k {
			return 0, false
		}
	}
	if j < len(d.data) && (d.data[j] == 'e' || d.data[j] == 'E') {
		j++
		if j < len(d.data) && (d.data[j] == '+' || d.data[j] == '-') {
			j++
		}
		k := j
		for j < len(d.data) && isDigit(d.data[j]) {
			j++
		}
		if j == k {
			return 0, false
		}
	}
	v, err := strconv.ParseFloat(string(d.data[d.i:j]), 64)
	d.i = j
	return v, err == nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (d *decoder) bool() (bool, bool) {
	if d.literal("true") {
		return true, true
	}
	return false, d.literal("false")
}

// string reads a JSON string of valid UTF-8, as encoding/json does.
func (d *decoder) string() (string, bool) {
	b, ok := d.text()
	return string(b), ok
}

// text reads a JSON string of valid UTF-8 and returns its contents: a
// slice of data when it has no escape.
func (d *decoder) text() ([]byte, bool) {
	if !d.literal(`"`) {
		return nil, false
	}
	start, ascii := d.i, true
	for j := d.i; j < len(d.data); j++ {
		c := d.data[j]
		switch {
		case c == '"':
			s := d.data[start:j]
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			d.i = j + 1
			return s, true
		case c == '\\':
			return d.escapedText(start)
		case c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// escapedText reads the string whose contents start at start and that
// holds an escape.
func (d *decoder) escapedText(start int) ([]byte, bool) {
	out := make([]byte, 0, min(stringEnd(d.data, start), len(d.data))-start)
	for j := start; j < len(d.data); j++ {
		c := d.data[j]
		switch {
		case c == '"':
			if !utf8.Valid(out) {
				return nil, false
			}
			d.i = j + 1
			return out, true
		case c < 0x20:
			return nil, false
		case c != '\\':
			out = append(out, c)
			continue
		}
		if j++; j == len(d.data) {
			return nil, false
		}
		switch d.data[j] {
		case '"', '\\', '/':
			out = append(out, d.data[j])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(d.data[j+1:])
			if r < 0 {
				return nil, false
			}
			j += 4
			if utf16.IsSurrogate(r) {
				// A valid pair is one character; anything else is U+FFFD
				// and leaves what follows to be read on its own.
				if next := d.data[j+1:]; len(next) >= 6 && next[0] == '\\' && next[1] == 'u' {
					if dec := utf16.DecodeRune(r, hex4(next[2:])); dec != unicode.ReplacementChar {
						out = utf8.AppendRune(out, dec)
						j += 6
						continue
					}
				}
				r = unicode.ReplacementChar
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, false
		}
	}
	return nil, false
}

// hex4 reads the four hex digits of a \u escape; -1 if they are not.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// raw reads any JSON value and returns a copy of its text, as a
// json.RawMessage decodes.
func (d *decoder) raw() (json.RawMessage, bool) {
	start := d.i
	if !d.skip(0) {
		return nil, false
	}
	text := d.data[start:d.i]
	if !json.Valid(text) {
		return nil, false
	}
	return append(json.RawMessage(nil), text...), true
}

// skip moves past one JSON value, roughly checked (raw checks it fully).
func (d *decoder) skip(depth int) bool {
	if depth > MaxRecordDepth || d.i >= len(d.data) {
		return false
	}
	switch c := d.data[d.i]; {
	case c == '"':
		d.i = stringEnd(d.data, d.i+1) + 1
		return d.i <= len(d.data)
	case c == '{' || c == '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		d.i++
		for {
			d.space()
			if d.i >= len(d.data) {
				return false
			}
			switch d.data[d.i] {
			case closing:
				d.i++
				return true
			case ',', ':':
				d.i++
			default:
				if !d.skip(depth + 1) {
					return false
				}
			}
		}
	default:
		j := d.i
		for j < len(d.data) && (isDigit(d.data[j]) || isLetter(d.data[j]) || d.data[j] == '-' || d.data[j] == '+' || d.data[j] == '.') {
			j++
		}
		if j == d.i {
			return false
		}
		d.i = j
		return true
	}
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
