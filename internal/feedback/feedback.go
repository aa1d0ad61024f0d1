// Package feedback holds what the parsers' feedback texts share where they
// repeat the model's own output: names cut to a bound on a rune boundary,
// quoted, the kind of a JSON value named as a person would, and the
// bounded list of a reply's invalid items.
package feedback

import (
	"fmt"
	"strconv"
	"strings"
)

// Cut returns s cut to at most n bytes on a rune boundary, and whether it
// was cut.
func Cut(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 { // a continuation byte: not a rune start
		cut--
	}
	return s[:cut], true
}

// Bounded returns s cut to at most n bytes on a rune boundary, marked with
// "…" when cut.
func Bounded(s string, n int) string {
	head, cut := Cut(s, n)
	if cut {
		return head + "…"
	}
	return head
}

// Quote returns s as a quoted Go string, cut first to at most n bytes on a
// rune boundary; "…" after the closing quote marks a cut.
func Quote(s string, n int) string {
	head, cut := Cut(s, n)
	if cut {
		return strconv.Quote(head) + "…"
	}
	return strconv.Quote(head)
}

// JSONKind names the kind of a valid JSON value by its first byte: object,
// array, string, boolean, null or number. An empty value is null.
func JSONKind(v []byte) string {
	if len(v) == 0 {
		return "null"
	}
	switch v[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// MaxListed bounds the invalid items (actions of an array, calls of a
// reply) a parser's feedback lists one by one.
const MaxListed = 8

// IsAre is the verb for n items: "is" for one, "are" for more.
func IsAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// List is the feedback on a reply some of whose items are invalid, so
// that none runs: head, one line per invalid item up to MaxListed, then
// "… and N more invalid <noun>." for the rest, then tail.
func List(head string, bad []string, noun, tail string) string {
	var b strings.Builder
	b.WriteString(head)
	for i, line := range bad {
		if i == MaxListed {
			fmt.Fprintf(&b, "\n… and %d more invalid %s.", len(bad)-i, noun)
			break
		}
		b.WriteString("\n" + line)
	}
	b.WriteString("\n" + tail)
	return b.String()
}
