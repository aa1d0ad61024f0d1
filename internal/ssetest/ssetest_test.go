package ssetest

import (
	"slices"
	"strings"
	"testing"
)

// TestRead: names, ids and data lines joined with newlines, an event per
// blank line, as EventSource reads them: any of CRLF, LF and a lone CR ends
// a line, the last event ID outlives its event, comments and events
// without data are dropped.
func TestRead(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Event
	}{
		{"event: steps\nid: 3\ndata: <a>\ndata: </a>\n\nevent: end\ndata: completed\n\n",
			[]Event{{Name: "steps", ID: "3", LastID: "3", Data: "<a>\n</a>"}, {Name: "end", LastID: "3", Data: "completed"}}},
		{"event: steps\r\nid: 3\r\ndata: a\rb\revent: end\rid: 9\r\rdata:x\n\n",
			[]Event{{Name: "end", ID: "9", LastID: "9", Data: "a"}, {Name: "message", LastID: "9", Data: "x"}}},
		{": comment\nevent: x\n\ndata\nid: a\x00b\n\n",
			[]Event{{Name: "message", Data: ""}}},
	} {
		got := Read(strings.NewReader(tc.in))
		if !slices.Equal(got, tc.want) {
			t.Errorf("Read(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}
