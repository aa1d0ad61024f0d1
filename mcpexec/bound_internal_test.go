package mcpexec

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// chunked reads at most n bytes at a time.
type chunked struct {
	r io.Reader
	n int
}

func (c *chunked) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// boundedBody passes a body at its limit, or an event stream whose lines
// are at most at the limit each, and refuses one byte more
// without handing over the bytes beyond the limit — even when a read
// brings them together with the end of the line.
func TestBoundedBody(t *testing.T) {
	const limit = 64
	line := strings.Repeat("x", limit)
	for _, tc := range []struct {
		name  string
		body  string
		lines bool
		ok    bool
	}{
		{"a body at the limit", line, false, true},
		{"a body past the limit", line + "x", false, false},
		{"lines at the limit", "data: " + line[6:] + "\n\ndata: " + line[6:] + "\r\n\r\n", true, true},
		{"a line past the limit", "data: " + line[5:] + "\n\n", true, false},
		{"many lines, more than the limit in all", strings.Repeat("data: "+line[:10]+"\n\n", 17), true, true},
	} {
		for _, small := range []bool{false, true} {
			var r io.Reader = strings.NewReader(tc.body)
			if small {
				r = &chunked{r: r, n: 7}
			}
			big := &oversize{}
			b := &boundedBody{r: io.NopCloser(r), limit: limit, left: limit, lines: tc.lines, big: big}
			got, err := io.ReadAll(b)
			switch {
			case tc.ok && (err != nil || len(got) != len(tc.body) || big.count() != 0):
				t.Errorf("%s (small reads %v): read %d of %d bytes, %v", tc.name, small, len(got), len(tc.body), err)
			case !tc.ok && (!errors.Is(err, errMessageTooLarge) || big.count() != 1):
				t.Errorf("%s (small reads %v): err %v, %d refusals counted; want errMessageTooLarge, 1", tc.name, small, err, big.count())
			case !tc.ok && tc.lines && bytes.ContainsAny(got[6:], "\r\n"):
				t.Errorf("%s (small reads %v): the end of the oversized line was handed over", tc.name, small)
			}
		}
	}
}
