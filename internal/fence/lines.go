package fence

import (
	"iter"
	"strings"
)

// Line is one line of a text, without its "\n".
type Line struct {
	Text string
	// Number is 1-based; Start and End are byte offsets, End excluding
	// "\n".
	Number, Start, End int
}

// Lines yields the lines of text. A text ending in "\n" has no empty last
// line; an empty text has no lines.
func Lines(text string) iter.Seq[Line] {
	return func(yield func(Line) bool) {
		start := 0
		for n := 1; start < len(text); n++ {
			end := strings.IndexByte(text[start:], '\n')
			if end < 0 {
				end = len(text)
			} else {
				end += start
			}
			if !yield(Line{Text: text[start:end], Number: n, Start: start, End: end}) {
				return
			}
			start = end + 1
		}
	}
}
