package jsonparser

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/polyloop/polyloop/internal/fence"
)

// maxLooseBraces bounds how many unbalanced braces that do not look like
// JSON ("use { carefully") the scan steps over before it stops, so that a
// reply of many such braces is read in linear time.
const maxLooseBraces = 16

// source is a text the parser reads for JSON: the reply itself (with other
// fenced blocks blanked out) or the content of one JSON fence.
type source struct {
	text string
	// lineBase is the reply line just before the source's first line.
	lineBase int
}

// candidate is one {...} region of a source, or one [...] region that opens
// like an array of objects.
type candidate struct {
	src   *source
	start int    // byte offset in src.text
	raw   []byte // the region
}

// isArray reports whether the candidate is a [...] region.
func (c candidate) isArray() bool { return len(c.raw) > 0 && c.raw[0] == '[' }

// found is what find made of a reply.
type found struct {
	objects []candidate // regions that are valid JSON objects
	arrays  []candidate // regions that are valid JSON arrays opening with an object
	// jsonish counts the malformed regions that look like JSON: they open
	// with a quoted key or close at once. firstJSONish is the first of them,
	// firstProse the first malformed region that does not look like JSON.
	jsonish      int
	firstJSONish *malformedJSON
	firstProse   *malformedJSON
	unclosed     *fence.Block // a JSON fence never closed
	emptyFence   *fence.Block // a JSON fence holding no region at all
	looseBraces  int
	regions      int // every region read, valid or not
}

// malformedJSON places the first decoding error of a region in the reply.
type malformedJSON struct {
	line, column int // 1-based; columns count runes
	message      string
}

// actions is how many separate actions (objects or arrays of them) the
// reply seems to hold: valid objects and arrays, and malformed regions that
// look like JSON.
func (f *found) actions() int { return len(f.objects) + len(f.arrays) + f.jsonish }

func find(text string) *found {
	f := &found{}
	var fences []fence.Block
	blocks := fence.Blocks(text)
	for i, b := range blocks {
		if !isJSONFence(b) {
			continue
		}
		if !b.Closed {
			f.unclosed = &blocks[i]
			return f
		}
		fences = append(fences, b)
	}
	if len(fences) == 0 {
		f.scan(&source{text: blankBlocks(text, blocks)})
		return f
	}
	for i, b := range fences {
		before := f.regions
		f.scan(&source{text: b.Code, lineBase: b.Line})
		if f.regions == before && f.emptyFence == nil {
			f.emptyFence = &fences[i]
		}
	}
	return f
}

func isJSONFence(b fence.Block) bool {
	switch b.Lang {
	case "json":
		return true
	case "":
		c := strings.TrimSpace(b.Code)
		return strings.HasPrefix(c, "{") || strings.HasPrefix(c, "[")
	}
	return false
}

// blankBlocks replaces the fenced blocks of text with spaces, keeping line
// breaks, so that offsets, lines and columns stay those of the reply.
func blankBlocks(text string, blocks []fence.Block) string {
	if len(blocks) == 0 {
		return text
	}
	b := []byte(text)
	for _, blk := range blocks {
		for i := blk.Start; i < blk.End; i++ {
			if b[i] != '\n' {
				b[i] = ' '
			}
		}
	}
	return string(b)
}

// scan adds the top-level {...} regions of src to f, and the [...] regions
// that open with '{' (arrays of actions). A region that is never balanced
// runs to the end of the source and ends the scan, unless it does not look
// like JSON: then only its brace is stepped over. A '[' that does not open
// with '{' ("see [1]", "[]") is stepped over.
func (f *found) scan(src *source) {
	for start := 0; start < len(src.text); {
		i := strings.IndexAny(src.text[start:], "{[")
		if i < 0 {
			return
		}
		start += i
		if src.text[start] == '[' && !opensWithObject(src.text[start+1:]) {
			start++
			continue
		}
		end, balanced := regionEnd(src.text, start)
		c := candidate{src: src, start: start, raw: []byte(src.text[start:end])}
		f.add(c)
		switch {
		case balanced:
			start = end
		case c.looksLikeJSON() || f.looseBraces == maxLooseBraces:
			return
		default:
			f.looseBraces++
			start++
		}
	}
}

// regionEnd returns the offset just past the brace that balances the one at
// start, skipping JSON strings, or len(text) and false when it is never
// balanced. Brackets count with braces.
func regionEnd(text string, start int) (int, bool) {
	depth, inString := 0, false
	for i := start; i < len(text); i++ {
		c := text[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				return i + 1, true
			}
		}
	}
	return len(text), false
}

// opensWithObject reports whether s, after white space, starts with '{'.
func opensWithObject(s string) bool {
	return strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), "{")
}

// looksLikeJSON reports whether the region opens with a quoted key or closes
// at once, as JSON objects do and prose braces do not; an array region, by
// its first object.
func (c candidate) looksLikeJSON() bool {
	raw := c.raw
	if c.isArray() {
		raw = []byte(strings.TrimLeft(string(raw[1:]), " \t\r\n"))
	}
	for _, b := range raw[1:] {
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		case '"', '}':
			return true
		}
		return false
	}
	return true
}

func (f *found) add(c candidate) {
	f.regions++
	var v json.RawMessage
	err := json.Unmarshal(c.raw, &v)
	switch {
	case err == nil && c.isArray():
		f.arrays = append(f.arrays, c)
	case err == nil:
		f.objects = append(f.objects, c)
	case c.looksLikeJSON():
		f.jsonish++
		if f.firstJSONish == nil {
			f.firstJSONish = c.place(err)
		}
	case f.firstProse == nil:
		f.firstProse = c.place(err)
	}
}

// place locates a decoding error of c in the reply.
func (c candidate) place(err error) *malformedJSON {
	off := c.start
	var se *json.SyntaxError
	if errors.As(err, &se) && se.Offset > 0 {
		off += int(se.Offset) - 1 // Offset counts the bytes read, the bad one included
	}
	off = min(off, len(c.src.text))
	before := c.src.text[:off]
	line := strings.Count(before, "\n") + 1
	col := len([]rune(before[strings.LastIndexByte(before, '\n')+1:])) + 1
	return &malformedJSON{line: c.src.lineBase + line, column: col, message: err.Error()}
}
