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
