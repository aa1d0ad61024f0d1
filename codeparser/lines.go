package codeparser

import (
	"iter"
	"strings"
)

// line is one line of a text, without its "\n".
type line struct {
	text string
	// number is 1-based; start and end are byte offsets, end excluding "\n".
	number, start, end int
}

// splitLines yields the lines of text. A text ending in "\n" has no empty
// last line; an empty text has no lines.
func splitLines(text string) iter.Seq[line] {
	return func(yield func(line) bool) {
		start := 0
		for n := 1; start < len(text); n++ {
			end := strings.IndexByte(text[start:], '\n')
			if end < 0 {
				end = len(text)
			} else {
				end += start
			}
			if !yield(line{text: text[start:end], number: n, start: start, end: end}) {
				return
			}
			start = end + 1
		}
	}
}
