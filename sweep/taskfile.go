package sweep

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/polyloop/polyloop"
)

// TaskFile is a TaskSource read from a file, streamed: JSONL (.jsonl,
// .ndjson) or CSV (.csv), by the file's extension.
//
// JSONL: one task per line, a JSON object with the keys id (a string or an
// integer), input (a string), and optionally target (a string, a number,
// or a list of them: the acceptable answers) and metadata (an object; its
// values are kept as strings, non-strings as their JSON). Blank lines are
// skipped; any other key is a problem.
//
// CSV: a header row naming the columns, then one task per record. The
// columns id and input are required, target is optional (one answer; an
// empty cell for none), and every other column is metadata under its
// name.
type TaskFile struct {
	Path string
}

// Describe implements TaskSource.
func (f TaskFile) Describe() string { return f.Path }

// Check implements TaskSource.
func (f TaskFile) Check(ctx context.Context) (int, error) {
	var p problems
	n := 0
	err := f.read(ctx, func(line int, t Task, prob *TaskError) error {
		if prob != nil {
			p.add(prob)
			return nil
		}
		n++
		p.task(f.Path, line, t)
		return nil
	})
	if err != nil {
		return n, err
	}
	return n, p.err()
}

// Tasks implements TaskSource.
func (f TaskFile) Tasks(ctx context.Context, yield func(Task) error) error {
	return f.read(ctx, func(line int, t Task, prob *TaskError) error {
		if prob != nil {
			return prob
		}
		if msg := t.problem(); msg != "" {
			return &TaskError{File: f.Path, Line: line, Msg: msg}
		}
		return yield(t)
	})
}

// read calls each for every task of the file, or for the problem of the
// line or record where there is one. It returns each's error, or what kept
// the file from being read.
func (f TaskFile) read(ctx context.Context, each func(line int, t Task, prob *TaskError) error) error {
	file, err := os.Open(f.Path)
	if err != nil {
		return fmt.Errorf("sweep: reading the task file: %w", err)
	}
	defer file.Close()
	switch strings.ToLower(filepath.Ext(f.Path)) {
	case ".jsonl", ".ndjson":
		return readJSONL(ctx, f.Path, file, each)
	case ".csv":
		return readCSV(ctx, f.Path, file, each)
	}
	return fmt.Errorf("sweep: task file %s: expected a .jsonl, .ndjson or .csv file", f.Path)
}

// guard is a task file as read: it returns ctx's error once ctx is done,
// and fails with errUnbounded once more than limit bytes were read since
// the last mark — a line or record without an end (/dev/zero) ends the
// read instead of taking all memory or all time.
type guard struct {
	ctx   context.Context
	r     io.Reader
	n     int64
	limit int64
}

var errUnbounded = errors.New("no end in sight")

func (g *guard) Read(p []byte) (int, error) {
	if err := g.ctx.Err(); err != nil {
		return 0, err
	}
	if g.n > g.limit {
		return 0, errUnbounded
	}
	n, err := g.r.Read(p)
	g.n += int64(n)
	return n, err
}

// mark starts counting anew: a line or record begins.
func (g *guard) mark() { g.n = 0 }

// readJSONL reads a JSONL task file. A line longer than MaxTaskBytes is a
// problem of that line, skipped; one longer than
// polyloop.MaxInputFileBytes ends the read.
func readJSONL(ctx context.Context, name string, r io.Reader, each func(int, Task, *TaskError) error) error {
	g := &guard{ctx: ctx, r: r, limit: polyloop.MaxInputFileBytes}
	br := bufio.NewReaderSize(g, 64<<10)
	for line := 1; ; line++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		g.mark()
		text, err := readLine(br)
		if errors.Is(err, errUnbounded) {
			return &TaskError{File: name, Line: line, Msg: fmt.Sprintf("the line is longer than %d bytes: this is no task file", polyloop.MaxInputFileBytes)}
		}
		if errors.Is(err, errLineTooLong) {
			if e := each(line, Task{}, &TaskError{File: name, Line: line, Msg: fmt.Sprintf("the line is longer than %d bytes, the most a task may take", MaxTaskBytes)}); e != nil {
				return e
			}
			continue
		}
		if len(text) == 0 && err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("sweep: reading the task file %s: %w", name, err)
		}
		if len(bytes.TrimSpace(text)) > 0 {
			t, prob := jsonTask(name, line, text)
			if e := each(line, t, prob); e != nil {
				return e
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("sweep: reading the task file %s: %w", name, err)
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line without its end; a line longer than
// MaxTaskBytes is skipped and reported as errLineTooLong (unless reading
// it fails).
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > MaxTaskBytes+1 {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err // the guard's
			}
			return nil, errLineTooLong
		}
		buf = append(buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		buf = bytes.TrimSuffix(bytes.TrimSuffix(buf, []byte("\n")), []byte("\r"))
		return buf, err
	}
}

// jsonTask decodes one JSONL line, or says what is wrong with it and where.
func jsonTask(name string, line int, text []byte) (Task, *TaskError) {
	at := func(offset int64, format string, args ...any) *TaskError {
		col := utf8.RuneCount(text[:min(int(offset), len(text))]) + 1
		return &TaskError{File: name, Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
	}
	if err := polyloop.CheckJSONLimits(text); err != nil {
		var le *polyloop.JSONLimitError
		if errors.As(err, &le) {
			return Task{}, at(int64(le.Offset), "%v", strings.TrimPrefix(err.Error(), "polyloop: "))
		}
		return Task{}, at(0, "%v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return Task{}, at(0, "expected a JSON object: a task with id, input and optionally target and metadata")
	}
	var t Task
	seen := map[string]bool{}
	for dec.More() {
		keyAt := skipSeparators(text, dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return Task{}, syntaxAt(at, keyAt, err)
		}
		key, _ := tok.(string)
		valueAt := skipSeparators(text, dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Task{}, syntaxAt(at, valueAt, err)
		}
		if seen[key] {
			return Task{}, at(keyAt, "the key %q appears twice", key)
		}
		seen[key] = true
		if msg, atKey := t.set(key, raw); msg != "" {
			if atKey {
				return Task{}, at(keyAt, "%s", msg)
			}
			return Task{}, at(valueAt, "%s", msg)
		}
	}
	if _, err := dec.Token(); err != nil {
		return Task{}, syntaxAt(at, dec.InputOffset(), err)
	}
	if dec.More() {
		return Task{}, at(skipSeparators(text, dec.InputOffset()), "text after the task's object: one task per line")
	}
	switch {
	case !seen["id"]:
		return Task{}, at(0, "the task has no id")
	case !seen["input"]:
		return Task{}, at(0, "task %q has no input", t.ID)
	}
	return t, nil
}

func syntaxAt(at func(int64, string, ...any) *TaskError, off int64, err error) *TaskError {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return at(se.Offset, "malformed JSON: %v", err)
	}
	return at(off, "malformed JSON: %v", err)
}

// skipSeparators moves an offset past the spaces, commas and colons
// between JSON tokens, to the next token.
func skipSeparators(text []byte, off int64) int64 {
	for int(off) < len(text) && strings.IndexByte(" \t\r,:", text[off]) >= 0 {
		off++
	}
	return off
}

// set takes a key of a JSONL task, or says what is wrong with it and
// whether the problem is the key's (or its value's).
func (t *Task) set(key string, raw json.RawMessage) (msg string, atKey bool) {
	switch key {
	case "id":
		var s string
		if json.Unmarshal(raw, &s) == nil {
			t.ID = s
			return "", false
		}
		var n json.Number
		if json.Unmarshal(raw, &n) == nil && !strings.ContainsAny(n.String(), ".eE") {
			t.ID = n.String()
			return "", false
		}
		return "id: expected a string or an integer", false
	case "input":
		if json.Unmarshal(raw, &t.Input) != nil {
			return "input: expected a string", false
		}
	case "target":
		return t.setTarget(raw), false
	case "metadata":
		return t.setMetadata(raw), false
	default:
		return fmt.Sprintf("unknown key %q: the keys of a task are id, input, target, metadata", key), true
	}
	return "", false
}

func (t *Task) setTarget(raw json.RawMessage) string {
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		list = []json.RawMessage{raw}
	}
	for _, item := range list {
		v, ok := scalarText(item)
		if !ok {
			return "target: expected a string, a number, or a list of them"
		}
		t.Target = append(t.Target, v)
	}
	return ""
}

func (t *Task) setMetadata(raw json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return "metadata: expected an object"
	}
	t.Metadata = make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := scalarText(v); ok {
			t.Metadata[k] = s
			continue
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			return "metadata: " + err.Error()
		}
		t.Metadata[k] = buf.String()
	}
	return ""
}

// scalarText is a JSON string's value or a number's text.
func scalarText(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String(), true
	}
	return "", false
}

// csvSlack is what the CSV reader may read ahead of a record.
const csvSlack = 64 << 10

// readCSV reads a CSV task file. A record (the header too) larger than
// MaxTaskBytes ends the read once that much of it is read: a CSV reader
// cannot skip to the next record of a file it cannot trust.
func readCSV(ctx context.Context, name string, r io.Reader, each func(int, Task, *TaskError) error) error {
	g := &guard{ctx: ctx, r: r, limit: MaxTaskBytes + csvSlack}
	cr := csv.NewReader(g)
	cr.ReuseRecord = true
	tooLarge := func(line int) error {
		return &TaskError{File: name, Line: line, Msg: fmt.Sprintf("the record is larger than %d bytes, the most a task may take", MaxTaskBytes)}
	}
	head, err := cr.Read()
	if err != nil {
		switch {
		case errors.Is(err, io.EOF):
			return &TaskError{File: name, Line: 1, Msg: "the task file is empty: a CSV task file starts with a header row (id,input,target,...)"}
		case errors.Is(err, errUnbounded):
			return tooLarge(1)
		case ctx.Err() != nil:
			return ctx.Err()
		}
		return csvError(name, err)
	}
	cols, err := csvColumns(name, head)
	if err != nil {
		return err
	}
	next := 2 // the line the next record starts at, as far as is known
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		g.mark()
		rec, err := cr.Read()
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, errUnbounded):
			return tooLarge(next)
		case ctx.Err() != nil:
			return ctx.Err()
		}
		var t Task
		var prob *TaskError
		var line int
		if err != nil {
			var pe *csv.ParseError
			if !errors.As(err, &pe) {
				return fmt.Errorf("sweep: reading the task file %s: %w", name, err)
			}
			prob, line = csvError(name, err), pe.StartLine
		} else {
			line, _ = cr.FieldPos(0)
			t, prob = csvTask(name, cr, cols, rec)
		}
		next = line + 1
		if e := each(line, t, prob); e != nil {
			return e
		}
	}
}

// csvColumns reads the header: the index of each column, id and input
// required.
func csvColumns(name string, head []string) ([]string, error) {
	cols := append([]string(nil), head...)
	seen := map[string]bool{}
	for i, c := range cols {
		c = strings.TrimSpace(strings.TrimPrefix(c, "\ufeff"))
		cols[i] = c
		if c == "" || seen[c] {
			return nil, &TaskError{File: name, Line: 1, Column: i + 1, Msg: fmt.Sprintf("column %d of the header is empty or repeated (%q)", i+1, c)}
		}
		seen[c] = true
	}
	for _, need := range []string{"id", "input"} {
		if !seen[need] {
			return nil, &TaskError{File: name, Line: 1, Msg: fmt.Sprintf("the header has no column %q: a CSV task file has the columns id, input and optionally target, then metadata", need)}
		}
	}
	return cols, nil
}

func csvTask(name string, cr *csv.Reader, cols, rec []string) (Task, *TaskError) {
	var t Task
	size := 0
	for i, v := range rec {
		size += len(v)
		switch cols[i] {
		case "id":
			t.ID = v
		case "input":
			t.Input = v
		case "target":
			if v != "" {
				t.Target = []string{v}
			}
		default:
			if t.Metadata == nil {
				t.Metadata = map[string]string{}
			}
			t.Metadata[cols[i]] = v
		}
		if utf8.ValidString(v) {
			continue
		}
		line, col := cr.FieldPos(i)
		return Task{}, &TaskError{File: name, Line: line, Column: col, Msg: fmt.Sprintf("column %s is not valid UTF-8", cols[i])}
	}
	if size > MaxTaskBytes {
		line, _ := cr.FieldPos(0)
		return Task{}, &TaskError{File: name, Line: line, Msg: fmt.Sprintf("the record is larger than %d bytes, the most a task may take", MaxTaskBytes)}
	}
	return t, nil
}

func csvError(name string, err error) *TaskError {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &TaskError{File: name, Line: pe.Line, Column: pe.Column, Msg: pe.Err.Error()}
	}
	return &TaskError{File: name, Line: 1, Msg: err.Error()}
}
