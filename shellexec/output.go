package shellexec

import (
	"bytes"
	"sync"
)

// capture collects a command's output: it keeps the first limit characters,
// counts the characters it drops, and watches every line for the completion
// sentinel, without holding more than the kept part in memory.
//
// A character is counted at each byte that starts a UTF-8 sequence (any byte
// that is not a continuation byte), so counts are exact for UTF-8 and
// sequences split across writes are handled. At most four bytes a character
// are kept, whatever the output.
type capture struct {
	mu        sync.Mutex
	limit     int
	kept      []byte
	keptRunes int
	keeping   bool // whether the current character is being kept
	dropped   int

	sentinel []byte
	line     []byte // the current line, while it can still equal the sentinel
	long     bool   // the current line is already too long to be the sentinel
	sawDone  bool
}

func newCapture(limit int, sentinel string) *capture {
	return &capture{limit: limit, sentinel: []byte(sentinel)}
}

// Write implements io.Writer; it never fails.
func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range p {
		c.keep(b)
		if len(c.sentinel) > 0 {
			c.watch(b)
		}
	}
	return len(p), nil
}

func (c *capture) keep(b byte) {
	if b&0xC0 != 0x80 { // starts a character
		c.keeping = c.keptRunes < c.limit && len(c.kept) < c.maxKept()
		if c.keeping {
			c.keptRunes++
		} else {
			c.dropped++
		}
	}
	// Continuation bytes past the four of a UTF-8 sequence are not text:
	// output that is not UTF-8 must not grow the kept part without bound.
	if c.keeping && len(c.kept) < c.maxKept() {
		c.kept = append(c.kept, b)
	}
}

// maxKept bounds the kept bytes: four for each character kept.
func (c *capture) maxKept() int { return 4 * c.limit }

func (c *capture) watch(b byte) {
	if b == '\n' {
		c.endLine()
		return
	}
	if c.long {
		return
	}
	// White space around the sentinel is allowed, so a line may be somewhat
	// longer than it; past that it cannot match.
	if len(c.line) > 2*len(c.sentinel)+16 {
		c.long, c.line = true, c.line[:0]
		return
	}
	c.line = append(c.line, b)
}

func (c *capture) endLine() {
	if !c.long && bytes.Equal(bytes.TrimSpace(c.line), c.sentinel) {
		c.sawDone = true
	}
	c.line, c.long = c.line[:0], false
}

// result returns the kept output, the number of dropped characters and
// whether the sentinel line was seen. It is called once the stream ended.
func (c *capture) result() (string, int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sentinel) > 0 {
		c.endLine() // a last line without its newline
	}
	return string(c.kept), c.dropped, c.sawDone
}
