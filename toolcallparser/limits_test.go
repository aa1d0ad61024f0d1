package toolcallparser_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/toolcallparser"
)

// Arguments sent as a JSON string whose text nests deeper than the log
// holds are Invalid, with feedback: an Act with them could not be recorded.
func TestArgsBeyondTheLogsLimits(t *testing.T) {
	deep := `{"a":` + strings.Repeat("[", polyloop.MaxJSONDepth+5) + strings.Repeat("]", polyloop.MaxJSONDepth+5) + `}`
	quoted, _ := json.Marshal(deep)
	d := toolcallparser.New(toolcallparser.Options{}).Parse(polyloop.ModelReply{
		ToolCalls: []polyloop.ToolCall{{ID: "c", Name: "t", Args: quoted}}})
	inv, ok := d.(polyloop.Invalid)
	if !ok || !strings.Contains(inv.Feedback, "beyond what a run can record") {
		t.Fatalf("decision %#v, want Invalid naming the limit", d)
	}
}
