package view

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/polyloop/polyloop/internal/ssetest"
)

// FuzzSSEFraming: whatever the text, sendEvent frames exactly one event,
// with its own name and id, whose data a browser reads back as the text
// (line terminators as LF, as the HTML parser reads them).
func FuzzSSEFraming(f *testing.F) {
	f.Add("plain", 3)
	f.Add("a\rb\r\nc\nd", 0)
	f.Add("ok\revent: end\rid: 99999\rdata: completed\r\r", 7)
	f.Add("\r\n\r\n\n\r", 1)
	f.Fuzz(func(t *testing.T, text string, id int) {
		var b bytes.Buffer
		if err := sendEvent(&b, "steps", id, text); err != nil {
			t.Fatal(err)
		}
		events := ssetest.Read(&b)
		want := strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n")
		if len(events) != 1 {
			t.Fatalf("%q framed as %d events: %+v", text, len(events), events)
		}
		e := events[0]
		if e.Name != "steps" || e.ID != strconv.Itoa(id) || e.LastID != e.ID || e.Data != want {
			t.Fatalf("%q framed as %+v, want data %q", text, e, want)
		}
	})
}
