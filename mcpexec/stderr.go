package mcpexec

import (
	"bytes"
	"sync"
	"unicode/utf8"
)

// StderrTail is how many bytes of a stdio server's standard error the
// executor keeps: the end of it, shown when the server fails to start.
const StderrTail = 4096

// tail is an io.Writer that keeps the last max bytes written to it. Safe for
// concurrent use: the exec package copies the server's stderr from its own
// goroutine.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTail(max int) *tail { return &tail{max: max} }

// Write keeps the end of what it is given; it never fails.
func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String returns what is kept, trimmed, starting at a whole UTF-8 character.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	for len(b) > 0 && !utf8.RuneStart(b[0]) {
		b = b[1:]
	}
	return string(bytes.TrimSpace(b))
}
