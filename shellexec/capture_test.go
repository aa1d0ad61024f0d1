package shellexec

import (
	"strings"
	"testing"
)

func TestCaptureCountsCharactersAcrossWrites(t *testing.T) {
	t.Parallel()
	input := "héllo wörld ✓ done\nSUBMIT\n"
	for split := range len(input) {
		c := newCapture(7, "SUBMIT")
		c.Write([]byte(input[:split]))
		c.Write([]byte(input[split:]))
		text, dropped, done := c.result()
		if text != "héllo w" || dropped != len([]rune(input))-7 || !done {
			t.Fatalf("split at %d: %q, dropped %d, done %v", split, text, dropped, done)
		}
	}
}

func TestCaptureSentinelLines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		out  string
		done bool
	}{
		{"SUBMIT", true},
		{"a\r\nSUBMIT\r\n", true},
		{"\t SUBMIT \n", true},
		{"SUBMIT x\n", false},
		{strings.Repeat(" ", 100) + "SUBMIT\n", false}, // too long to be the line
		{"SUB\nMIT\n", false},
		{"", false},
	} {
		c := newCapture(1000, "SUBMIT")
		c.Write([]byte(tc.out))
		if _, _, done := c.result(); done != tc.done {
			t.Errorf("%q: done = %v, want %v", tc.out, done, tc.done)
		}
	}
	c := newCapture(1000, "")
	c.Write([]byte("\n\n"))
	if _, _, done := c.result(); done {
		t.Error("an empty sentinel matched an empty line")
	}
}

// TestCaptureBoundsBytesOfBadUTF8: output that is not UTF-8 — one byte that
// starts a sequence and a million continuation bytes, one "character" — is
// kept to four bytes a character.
func TestCaptureBoundsBytesOfBadUTF8(t *testing.T) {
	t.Parallel()
	c := newCapture(10, "")
	c.Write([]byte("\xc0" + strings.Repeat("\x80", 1_000_000)))
	c.Write([]byte("abc"))
	text, dropped, _ := c.result()
	if len(text) > 40 || dropped != 3 {
		t.Errorf("kept %d bytes, dropped %d characters; want at most 40 bytes and the 3 later characters dropped", len(text), dropped)
	}
}
