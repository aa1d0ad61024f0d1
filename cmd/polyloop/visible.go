package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// Outside text — replies, observations, answers, arguments, a server's
// error message — may hold control characters that a terminal obeys: an
// OSC 52 sequence writes the clipboard, a CSI sequence erases lines, a
// carriage return writes over a line, a bidi override reorders what is
// read. The command shows them instead: each becomes an escape (\x1b,
// \r, \u009b, \u202e, \xff for a byte that is not UTF-8). Newlines and
// tabs stay.

// visible returns s with its control characters (but newline and tab)
// escaped: carriage return as \r, the rest of C0 and DEL as \xNN, C1 and the bidi controls as \uNNNN, a byte
// that is not UTF-8 as \xNN. Text without any is returned as it is.
func visible(s string) string {
	i := firstHidden(s)
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\r':
			b.WriteString(`\r`)
		case hidden(r) && r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case hidden(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// firstHidden is the offset of the first byte visible would escape, or
// len(s).
func firstHidden(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if hidden(rune(c)) {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || hidden(r) {
			return i
		}
		i += n
	}
	return len(s)
}

// hidden reports whether a terminal would obey r rather than show it.
func hidden(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f: // C0, DEL
		return true
	case r >= 0x80 && r < 0xa0: // C1
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c: // bidi controls
		return true
	}
	return false
}

// visibleWriter escapes what it writes as visible does. A character split
// across two writes is kept whole: the bytes of one that is not finished
// wait for the next write (Flush writes them as they are, escaped).
// Writes from several goroutines (a worker's runs, a sweep's progress)
// are serialized: each Write reaches w whole.
type visibleWriter struct {
	w       io.Writer
	mu      sync.Mutex
	pending []byte
}

func (v *visibleWriter) Write(p []byte) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	buf := append(v.pending, p...)
	cut := len(buf)
	for k := 1; k < utf8.UTFMax && k <= len(buf); k++ {
		if utf8.RuneStart(buf[len(buf)-k]) {
			if !utf8.FullRune(buf[len(buf)-k:]) {
				cut = len(buf) - k
			}
			break
		}
	}
	v.pending = append([]byte(nil), buf[cut:]...)
	if _, err := io.WriteString(v.w, visible(string(buf[:cut]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes the bytes of an unfinished character, escaped.
func (v *visibleWriter) Flush() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.pending) == 0 {
		return nil
	}
	_, err := io.WriteString(v.w, visible(string(v.pending)))
	v.pending = nil
	return err
}

// Unwrap returns the stream written to (a terminal check looks at it).
func (v *visibleWriter) Unwrap() io.Writer { return v.w }

// escapeOutput makes stdout and stderr escape what they write, unless
// --raw.
func (a *app) escapeOutput() {
	if a.raw {
		return
	}
	if _, ok := a.stdout.(*visibleWriter); !ok {
		a.stdout = &visibleWriter{w: a.stdout}
	}
	if _, ok := a.stderr.(*visibleWriter); !ok {
		a.stderr = &visibleWriter{w: a.stderr}
	}
}

// flushOutput writes what the escaping writers hold back.
func (a *app) flushOutput() {
	for _, w := range []io.Writer{a.stdout, a.stderr} {
		if v, ok := w.(*visibleWriter); ok {
			_ = v.Flush()
		}
	}
}

// machineOut is standard output for what programs read: --json, --csv,
// export. It is never escaped as visible does: the text must arrive as it
// is stored (a CSV cell byte for byte). JSON is safe on a terminal anyway:
// writeJSON and writeJSONLine write every control character as a JSON
// escape, which decodes to the same text.
func (a *app) machineOut() io.Writer {
	if a.rawOut != nil {
		return a.rawOut
	}
	if v, ok := a.stdout.(*visibleWriter); ok {
		return v.w
	}
	return a.stdout
}

// terminalOut and terminalErr are the streams for a display that escapes
// outside text itself (rawOut, rawErr when set).
func (a *app) terminalOut() io.Writer {
	if a.rawOut != nil {
		return a.rawOut
	}
	return a.stdout
}

func (a *app) terminalErr() io.Writer {
	if a.rawErr != nil {
		return a.rawErr
	}
	return a.stderr
}
