package main

import (
	"fmt"
	"strings"
	"unicode"

	"golang.org/x/text/width"

	"github.com/polyloop/polyloop"
)

// preview is the streamed text of the model call under way, as a terminal
// shows it: the deltas of one client attempt of one call, written as they
// arrive after a line prefix. It follows where the cursor is (rows below
// the preview's first, and the column), so that a superseded attempt can be
// erased — every row it took, wrapped or not — and the next one shown in
// its place. It stops writing before it would fill the terminal: rows that
// scrolled off could not be erased.
type preview struct {
	shown   bool
	call    string // the call and client attempt shown
	attempt int
	rows    int // rows below the first
	col     int
	full    bool // stopped at the terminal's height
	tool    int  // the tool call whose arguments are shown; -1 for none
}

// Default terminal size, when the terminal does not say.
const (
	defaultWidth  = 80
	defaultHeight = 24
)

// previewDelta shows a delta: it starts the preview, or replaces one of
// another call or attempt (a client that did not supersede it), and
// appends the delta's fragment.
func (p *progress) previewDelta(ev polyloop.Event) string {
	var b strings.Builder
	pv := &p.pv
	if pv.shown && (pv.call != ev.CallID || pv.attempt != ev.Delta.Attempt) {
		b.WriteString(p.erase())
	}
	if !pv.shown {
		*pv = preview{shown: true, call: ev.CallID, attempt: ev.Delta.Attempt, tool: -1}
		b.WriteString(p.prefix + p.paint(ansiBold, fmt.Sprintf("step %-3d", ev.Step)) + " reply  ")
		p.advance(p.prefix + fmt.Sprintf("step %-3d reply  ", ev.Step))
	}
	b.WriteString(p.paint(ansiDim, p.fit(fragment(ev.Delta, pv))))
	return b.String()
}

// fragment is the text a delta adds: its text, or a tool call's arguments
// (on a line of their own, after the tool's name, for its first fragment).
func fragment(d *polyloop.Delta, pv *preview) string {
	s := d.Text
	if d.ToolCallID != "" || d.ToolName != "" || d.Args != "" {
		if pv.tool != d.ToolCall {
			pv.tool = d.ToolCall
			s += "\n→ " + d.ToolName + " "
		}
		s += d.Args
	}
	return sanitize(s)
}

// fit cuts s where the preview would fill the terminal, and advances the
// cursor over what it keeps.
func (p *progress) fit(s string) string {
	pv := &p.pv
	if pv.full {
		return ""
	}
	var kept strings.Builder
	for _, r := range s {
		rows, col := pv.rows, pv.col
		p.advance(string(r))
		if pv.rows > p.maxRows() {
			pv.rows, pv.col, pv.full = rows, col, true
			return kept.String()
		}
		kept.WriteRune(r)
	}
	return kept.String()
}

// maxRows is how many rows below the first a preview may take.
func (p *progress) maxRows() int {
	h := p.height
	if h <= 0 {
		h = defaultHeight
	}
	return max(h-2, 0)
}

// advance moves the cursor over s as the terminal does: a newline goes to
// the next row; a character that does not fit in the row goes to the next.
func (p *progress) advance(s string) {
	w := p.width
	if w <= 0 {
		w = defaultWidth
	}
	pv := &p.pv
	for _, r := range s {
		if r == '\n' {
			pv.rows, pv.col = pv.rows+1, 0
			continue
		}
		rw := runeWidth(r)
		if pv.col+rw > w {
			pv.rows, pv.col = pv.rows+1, 0
		}
		pv.col += rw
	}
}

// erase returns what erases the preview: back to its first row's start,
// then clear to the end of the screen.
func (p *progress) erase() string {
	pv := &p.pv
	if !pv.shown {
		return ""
	}
	s := "\r"
	if pv.rows > 0 {
		s += fmt.Sprintf("\x1b[%dA", pv.rows)
	}
	*pv = preview{}
	return s + "\x1b[J"
}

// endPreview ends a preview that became the reply: its text stays, and the
// next line starts below it.
func (p *progress) endPreview() string {
	if !p.pv.shown {
		return ""
	}
	p.pv = preview{}
	return "\n"
}

// previewSuperseded erases the preview when the superseded candidate is
// the one shown: that client attempt of the call, or any attempt of it when
// the whole call is superseded (Delta nil).
func (p *progress) previewSuperseded(ev polyloop.Event) string {
	pv := &p.pv
	if !pv.shown || pv.call != ev.CallID || (ev.Delta != nil && ev.Delta.Attempt != pv.attempt) {
		return ""
	}
	return p.erase()
}

// sanitize keeps a model's text from moving the cursor: tabs become
// spaces, other control characters but newlines are shown escaped
// (visible).
func sanitize(s string) string {
	return visible(strings.ReplaceAll(s, "\t", " "))
}

// runeWidth is how many columns a terminal gives r: two for wide and
// full-width characters, none for combining marks, one otherwise.
func runeWidth(r rune) int {
	switch {
	case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r):
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}
