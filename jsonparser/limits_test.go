package jsonparser_test

import (
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/jsonparser"
)

// A JSON action in text whose arguments nest deeper than the log holds is
// Invalid, with feedback: an Act with them could not be recorded.
func TestArgsBeyondTheLogsLimits(t *testing.T) {
	n := polyloop.MaxJSONDepth + 5
	text := `{"tool":"t","args":{"a":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}}`
	d := jsonparser.New(jsonparser.Options{}).Parse(polyloop.ModelReply{Text: text})
	inv, ok := d.(polyloop.Invalid)
	if !ok || !strings.Contains(inv.Feedback, "beyond what a run can record") {
		t.Fatalf("decision %#v, want Invalid naming the limit", d)
	}
}
