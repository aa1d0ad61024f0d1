// Package fence reads the fenced code blocks of a model's reply, as
// CommonMark defines them: the one fence reader of the parsers that read
// fences (codeparser, jsonparser).
package fence

import "strings"

// Block is one fenced code block of a reply, as CommonMark defines fences:
// an opening line of at least three backticks or tildes (indented by at most
// three spaces) with an optional info string, and a closing line of the same
// character, at least as long, with nothing else on it.
type Block struct {
	// Info is the info string after the opening fence, trimmed.
	Info string
	// Lang is the first word of Info, lower-cased ("" for a bare fence).
	Lang string
	// Code is the block's content: the lines between the fences, joined by
	// "\n", without a final newline. Up to as many leading spaces as the
	// opening fence was indented are removed from each line.
	Code string
	// Line is the 1-based line number of the opening fence.
	Line int
	// Start and End are the byte offsets of the block in the text, from the
	// start of the opening fence line to the end of the closing fence line.
	Start, End int
	// Closed reports whether a closing fence was found. An unclosed block
	// runs to the end of the text.
	Closed bool
}

// Blocks returns the fenced code blocks of text in order. A backtick fence
// whose info string contains a backtick is not a fence (it is inline code,
// as in CommonMark).
func Blocks(text string) []Block {
	var blocks []Block
	var cur *fenceState
	for ln := range Lines(text) {
		if cur == nil {
			if f, ok := openingFence(ln.Text); ok {
				cur = &fenceState{fence: f, block: Block{Info: f.info, Lang: langOf(f.info), Line: ln.Number, Start: ln.Start}}
			}
			continue
		}
		if cur.closes(ln.Text) {
			cur.block.Closed, cur.block.End = true, ln.End
			blocks = append(blocks, cur.finish())
			cur = nil
			continue
		}
		cur.lines = append(cur.lines, dedent(strings.TrimSuffix(ln.Text, "\r"), cur.indent))
	}
	if cur != nil {
		cur.block.End = len(text)
		blocks = append(blocks, cur.finish())
	}
	return blocks
}

// fence is an opening fence line.
type fence struct {
	char   byte
	count  int
	indent int
	info   string
}

type fenceState struct {
	fence
	block Block
	lines []string
}

func (s *fenceState) finish() Block {
	s.block.Code = strings.Join(s.lines, "\n")
	return s.block
}

// closes reports whether line is a closing fence for s.
func (s *fenceState) closes(line string) bool {
	indent, rest := leadingSpaces(strings.TrimSuffix(line, "\r"))
	if indent > 3 {
		return false
	}
	n := run(rest, s.char)
	return n >= s.count && strings.TrimSpace(rest[n:]) == ""
}

func openingFence(line string) (fence, bool) {
	indent, rest := leadingSpaces(strings.TrimSuffix(line, "\r"))
	if indent > 3 || rest == "" || (rest[0] != '`' && rest[0] != '~') {
		return fence{}, false
	}
	c := rest[0]
	n := run(rest, c)
	if n < 3 {
		return fence{}, false
	}
	info := strings.TrimSpace(rest[n:])
	if c == '`' && strings.Contains(info, "`") {
		return fence{}, false
	}
	return fence{char: c, count: n, indent: indent, info: info}, true
}

func langOf(info string) string {
	if f := strings.Fields(info); len(f) > 0 {
		return strings.ToLower(f[0])
	}
	return ""
}

// run counts the leading bytes of s equal to c.
func run(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}

func leadingSpaces(s string) (int, string) {
	n := run(s, ' ')
	return n, s[n:]
}

func dedent(line string, n int) string {
	k := min(run(line, ' '), n)
	return line[k:]
}
