package main

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/diag"
)

// screen is a small terminal: it shows what a writer of progress leaves on
// a screen of a given width, wrapping long lines as terminals do (a
// character written past the last column goes to the next row), with LF as
// the terminal's output processing makes it (CR LF). It knows the escape
// sequences progress writes: cursor up (CSI n A), erase to the end of the
// screen (CSI J), erase the line (CSI K) and colours (CSI … m).
type screen struct {
	width    int
	rows     [][]rune
	row, col int
}

func newScreen(width int) *screen { return &screen{width: width, rows: [][]rune{nil}} }

func (s *screen) Write(p []byte) (int, error) {
	in := []rune(string(p))
	for i := 0; i < len(in); i++ {
		switch r := in[i]; {
		case r == '\x1b':
			i = s.escape(in, i)
		case r == '\n':
			s.down()
			s.col = 0
		case r == '\r':
			s.col = 0
		default:
			w := cells(r)
			if s.col+w > s.width {
				s.down()
				s.col = 0
			}
			s.put(r)
			s.col += w
		}
	}
	return len(p), nil
}

// escape applies the sequence starting at in[i] and returns its last index.
func (s *screen) escape(in []rune, i int) int {
	j := i + 2 // past ESC [
	for j < len(in) && (in[j] >= '0' && in[j] <= '9' || in[j] == ';') {
		j++
	}
	n, err := strconv.Atoi(string(in[i+2 : j]))
	if err != nil {
		n = 1
	}
	switch in[j] {
	case 'A':
		s.row = max(s.row-n, 0)
	case 'J':
		s.rows[s.row] = cutRow(s.rows[s.row], s.col)
		s.rows = s.rows[:s.row+1]
	case 'K':
		s.rows[s.row] = cutRow(s.rows[s.row], s.col)
	}
	return j
}

func (s *screen) down() {
	s.row++
	if s.row == len(s.rows) {
		s.rows = append(s.rows, nil)
	}
}

// put writes r at the cursor; a wide rune takes its cell and the next.
func (s *screen) put(r rune) {
	line := s.rows[s.row]
	for len(line) < s.col+cells(r) {
		line = append(line, ' ')
	}
	line[s.col] = r
	if cells(r) == 2 {
		line[s.col+1] = 0
	}
	s.rows[s.row] = line
}

// cells is how many columns the screen gives r: two for the Han
// characters the tests use, one for the rest.
func cells(r rune) int {
	if unicode.Is(unicode.Han, r) || r == '，' {
		return 2
	}
	return 1
}

func failureOf(msg string) *diag.Diagnostic { return diag.From(errors.New(msg)) }

func cutRow(line []rune, col int) []rune {
	if col < len(line) {
		return line[:col]
	}
	return line
}

// text is the screen's rows, trailing blanks and empty last rows dropped.
func (s *screen) text() string {
	var out []string
	for _, line := range s.rows {
		out = append(out, strings.TrimRight(strings.ReplaceAll(string(line), "\x00", ""), " "))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return strings.Join(out, "\n") + "\n"
}

func delta(call string, client int, text string) polyloop.Event {
	return polyloop.Event{Kind: polyloop.EventModelDelta, Step: 1, CallID: call, Attempt: 1, Delta: &polyloop.Delta{Attempt: client, Text: text}}
}

func superseded(call string, client int) polyloop.Event {
	return polyloop.Event{Kind: polyloop.EventCandidateSuperseded, Step: 1, CallID: call, Attempt: 1, Delta: &polyloop.Delta{Attempt: client, Superseded: true}}
}

func finished(call, text string) polyloop.Event {
	return polyloop.Event{Kind: polyloop.EventModelCallFinished, Step: 1, CallID: call,
		Reply: &polyloop.ModelReply{Text: text, Usage: polyloop.Usage{InputTokens: 10, OutputTokens: 5}}}
}

// liveProgress is progress on a terminal of width columns, in colour.
func liveProgress(scr *screen, width int) *progress {
	return &progress{w: scr, color: true, live: true, width: width, height: 24, since: "so far"}
}

func emitEach(t *testing.T, p *progress, evs ...polyloop.Event) {
	t.Helper()
	for _, ev := range evs {
		if err := p.Emit(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
}

// On a terminal the streamed text is shown as it arrives; a superseded
// attempt is erased — every row of it, wrapped or not — and the next
// attempt's text takes its place; the finished reply's text stays, followed
// by the usual line.
func TestProgressStreamsOnATerminal(t *testing.T) {
	t.Parallel()
	scr := newScreen(30)
	p := liveProgress(scr, 30)
	emitEach(t, p,
		polyloop.Event{Kind: polyloop.EventRunStarted, RunID: "r1", Agent: "a"},
		delta("m1.1", 1, "A first attempt whose text wraps past the edge"),
		delta("m1.1", 1, "\nand has a line of its own"),
		superseded("m1.1", 1),
		delta("m1.1", 2, "Hel"), delta("m1.1", 2, "lo."),
		finished("m1.1", "Hello."),
	)
	want := `run r1 started (agent a)
step 1   reply  Hello.
step 1   model  15 tokens (so
far 15 tokens, cost unknown)
`
	if got := scr.text(); got != want {
		t.Errorf("screen:\n%s\nwant:\n%s", got, want)
	}
}

// Wide characters take two columns: the erase counts the rows they fill.
func TestProgressErasesWideText(t *testing.T) {
	t.Parallel()
	scr := newScreen(30)
	p := liveProgress(scr, 30)
	emitEach(t, p,
		polyloop.Event{Kind: polyloop.EventRunStarted, RunID: "r1", Agent: "a"},
		// 16 columns of prefix and 28 of text: two rows.
		delta("m1.1", 1, "模型的第一个候选答案被取代了"),
		superseded("m1.1", 1),
	)
	if got, want := scr.text(), "run r1 started (agent a)\n"; got != want {
		t.Errorf("screen:\n%s\nwant:\n%s", got, want)
	}
}

// A failed call's preview is erased (the library supersedes it first); the
// failure is reported on its line.
func TestProgressErasesAFailedStream(t *testing.T) {
	t.Parallel()
	scr := newScreen(60)
	p := liveProgress(scr, 60)
	emitEach(t, p,
		delta("m1.1", 1, "Par"), delta("m1.1", 1, "tial"),
		superseded("m1.1", 1),
		polyloop.Event{Kind: polyloop.EventModelCallFinished, Step: 1, CallID: "m1.1", Failure: failureOf("stream broken")},
	)
	if got, want := scr.text(), "step 1   model call failed: stream broken\n"; got != want {
		t.Errorf("screen:\n%s\nwant:\n%s", got, want)
	}
}

// A call made again after a resume supersedes the killed call as a whole
// (no delta): a preview of it, if any, is erased; the new call's deltas are
// shown.
func TestProgressResumedCall(t *testing.T) {
	t.Parallel()
	scr := newScreen(60)
	p := liveProgress(scr, 60)
	emitEach(t, p,
		delta("m1.1", 1, "killed"),
		polyloop.Event{Kind: polyloop.EventCandidateSuperseded, Step: 1, CallID: "m1.1", Attempt: 1},
		delta("m1.2", 1, "again"),
		finished("m1.2", "again"),
	)
	want := "step 1   reply  again\nstep 1   model  15 tokens (so far 15 tokens, cost unknown)\n"
	if got := scr.text(); got != want {
		t.Errorf("screen:\n%s\nwant:\n%s", got, want)
	}
}

// A preview taller than the terminal could not be erased once scrolled
// off: it stops at the terminal's height, and is still erased whole.
func TestProgressBoundsThePreview(t *testing.T) {
	t.Parallel()
	scr := newScreen(10)
	p := liveProgress(scr, 10)
	p.height = 4
	emitEach(t, p, delta("m1.1", 1, strings.Repeat("0123456789", 8)))
	if n := strings.Count(scr.text(), "\n"); n > 3 {
		t.Errorf("the preview fills %d rows of a terminal of 4:\n%s", n, scr.text())
	}
	emitEach(t, p, superseded("m1.1", 1))
	if got := scr.text(); got != "\n" {
		t.Errorf("screen after the erase:\n%q", got)
	}
}

// Control characters in a model's text cannot move the cursor.
func TestProgressSanitizesDeltas(t *testing.T) {
	t.Parallel()
	scr := newScreen(60)
	p := liveProgress(scr, 60)
	emitEach(t, p, delta("m1.1", 1, "a\x1b[2Jb\rc\td"), superseded("m1.1", 1), delta("m1.1", 2, "ok"))
	if got, want := scr.text(), "step 1   reply  ok\n"; got != want {
		t.Errorf("screen:\n%q\nwant:\n%q", got, want)
	}
}

// Piped, progress shows no deltas and no superseded candidates: its lines
// are those of a run that did not stream.
func TestProgressPipedIgnoresPreviews(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := newProgress(&buf)
	emitEach(t, p, delta("m1.1", 1, "Hel"), superseded("m1.1", 1), delta("m1.1", 2, "Hello"), finished("m1.1", "Hello"))
	if got, want := buf.String(), "step 1   model  15 tokens (so far 15 tokens, cost unknown)\n"; got != want {
		t.Errorf("progress:\n%q\nwant:\n%q", got, want)
	}
}
