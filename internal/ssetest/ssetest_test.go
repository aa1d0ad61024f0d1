package ssetest

import (
	"strings"
	"testing"
)

// TestRead: names, ids and data lines joined with newlines, an event per
// blank line, as EventSource reads them.
func TestRead(t *testing.T) {
	in := "event: steps\nid: 3\ndata: <a>\ndata: </a>\n\nevent: end\ndata: completed\n\n"
	out := make(chan Event, 10)
	read(strings.NewReader(in), out)
	close(out)
	var got []Event
	for e := range out {
		got = append(got, e)
	}
	want := []Event{{Name: "steps", ID: "3", Data: "<a>\n</a>"}, {Name: "end", Data: "completed"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("events %+v, want %+v", got, want)
	}
}
