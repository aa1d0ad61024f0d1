package toolcallparser_test

import (
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/toolcallparser"
)

// BenchmarkParse measures a reply of two calls, with and without the
// argument check, valid and not.
func BenchmarkParse(b *testing.B) {
	valid := polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "weather", `{"city":"Oslo","days":2}`), call("2", "weather", `{"city":"Rome"}`)}}
	invalid := polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "weather", `{"city":"Oslo","days":2}`), call("2", "weather", `{"city":3}`)}}
	for _, bc := range []struct {
		name  string
		opts  toolcallparser.Options
		reply polyloop.ModelReply
	}{
		{"NoCheck", toolcallparser.Options{}, valid},
		{"Check", toolcallparser.Options{Tools: []polyloop.ToolSpec{weatherTool}}, valid},
		{"CheckMismatch", toolcallparser.Options{Tools: []polyloop.ToolSpec{weatherTool}}, invalid},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := toolcallparser.New(bc.opts)
			b.ReportAllocs()
			for b.Loop() {
				p.Parse(bc.reply)
			}
		})
	}
}
