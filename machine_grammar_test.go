package polyloop

import (
	"strings"
	"testing"
)

// The machine folds every record it builds through the log's grammar before
// queueing it: a record the grammar refuses is an internal error, caught at
// once (a panic), never written.
func TestMachineRefusesUngrammaticalRecords(t *testing.T) {
	st, err := foldLog(parseLogScript(t, "r", []string{"start"}))
	if err != nil {
		t.Fatal(err)
	}
	m := newMachine(st)
	defer func() {
		r := recover()
		msg, _ := r.(string)
		if !strings.Contains(msg, "the loop built a record the log's grammar refuses") {
			t.Fatalf("recovered %v, want the internal error", r)
		}
		if len(m.pending) != 0 {
			t.Fatalf("%d records queued", len(m.pending))
		}
	}()
	m.add(&ModelCallResult{Step: 1, CallID: "m1.1", Attempt: 1, Reply: &ModelReply{Text: "no intent before me"}})
	t.Fatal("no panic")
}
