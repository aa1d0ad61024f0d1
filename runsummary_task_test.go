package polyloop_test

import (
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// TestSummaryTask: a summary keeps the first MaxSummaryTask characters of
// the task, the same before and after the record's trip through JSON
// (invalid UTF-8 and NUL become U+FFFD byte by byte, as encoding/json
// decodes them), and TaskContains matches it case-sensitively.
func TestSummaryTask(t *testing.T) {
	t.Parallel()
	for _, task := range []string{"short", strings.Repeat("ü", polyloop.MaxSummaryTask+1), "bad \xff\xfe bytes and a \x00 nul", strings.Repeat("a", polyloop.MaxSummaryTask-1) + "\xff\xffzz"} {
		rec := polyloop.Record{Seq: 0, At: time.Unix(1, 0).UTC(), Body: &polyloop.RunStarted{RunID: "r", SnapshotHash: "sha256:h",
			Snapshot: polyloop.Snapshot{Task: polyloop.Task{Input: task}}}}
		var direct, tripped polyloop.RunSummary
		direct.Apply(rec)
		data, err := rec.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var back polyloop.Record
		if err := back.UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
		tripped.Apply(back)
		if direct.Task != tripped.Task {
			t.Errorf("task %q: summary %q, after JSON %q", task, direct.Task, tripped.Task)
		}
		if n := len([]rune(direct.Task)); n > polyloop.MaxSummaryTask || strings.ContainsRune(direct.Task, 0) {
			t.Errorf("task %q: summary of %d characters: %q", task, n, direct.Task)
		}
	}
	var s polyloop.RunSummary
	s.Apply(polyloop.Record{Body: &polyloop.RunStarted{RunID: "r", Snapshot: polyloop.Snapshot{Task: polyloop.Task{Input: "Find the Needle"}}}})
	if !(polyloop.RunFilter{TaskContains: "the Needle"}).Matches(s) || (polyloop.RunFilter{TaskContains: "the needle"}).Matches(s) {
		t.Error("TaskContains is not a case-sensitive substring match")
	}
}
