package polyloop

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestEventTraces pins recordEvents, the pure mapping of a durable record to
// its events (testdata/events): a log script in, each record's events out,
// read back (no audit) or, with `audit`, as the invocation that settled
// the actions sees them (the executor's own text). Regenerate with
// -rewrite.
//
//	events [audit]
//	<log script>
//	----
//	<seq kind fields, one event a line>
func TestEventTraces(t *testing.T) {
	datadriven.Walk(t, "testdata/events", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "events" {
				d.Fatalf(t, "unknown command %q", d.Cmd)
			}
			log := parseLogScript(t, "r", strings.Split(d.Input, "\n"))
			var b strings.Builder
			for _, r := range log.Records {
				var audit *ActionOutcome
				if d.HasArg("audit") {
					audit = &ActionOutcome{Status: Executed, Observation: "the executor's own text"}
				}
				evs := recordEvents("r", "a", r, audit)
				if len(evs) == 0 {
					fmt.Fprintf(&b, "%d %s: no event\n", r.Seq, r.Kind())
				}
				for _, ev := range evs {
					fmt.Fprintf(&b, "%d %s: %s\n", r.Seq, r.Kind(), renderEvent(ev))
				}
			}
			return b.String()
		})
	})
}

// renderEvent is an event's kind and the fields its kind sets.
func renderEvent(ev Event) string {
	var f []string
	add := func(k string, v any, set bool) {
		if set {
			f = append(f, fmt.Sprintf("%s=%v", k, v))
		}
	}
	add("step", ev.Step, ev.Step != 0)
	add("call", ev.CallID, ev.CallID != "")
	add("attempt", ev.Attempt, ev.Attempt != 0)
	add("action", ev.ActionID, ev.ActionID != "")
	add("index", ev.Index, ev.Index != 0)
	add("replay", ev.Replay, ev.Replay != "")
	if ev.Action != nil {
		add("tool", ev.Action.Tool, ev.Action.Tool != "")
	}
	if ev.Outcome != nil {
		add("outcome", fmt.Sprintf("%s:%q", ev.Outcome.Status, ev.Outcome.Observation), true)
	}
	add("reply", ev.Reply != nil, ev.Reply != nil)
	add("failure", ev.Failure != nil, ev.Failure != nil)
	add("step_record", ev.StepRecord != nil, ev.StepRecord != nil)
	add("action_result", ev.ActionResult != nil, ev.ActionResult != nil)
	add("gate", ev.Gate, ev.Gate != "")
	add("answer", ev.Answer != nil, ev.Answer != nil)
	add("stop", ev.StopReason, ev.StopReason != "")
	add("override", ev.Override != nil, ev.Override != nil)
	add("reception", ev.Reception != nil, ev.Reception != nil)
	add("snapshot", ev.Snapshot != nil, ev.Snapshot != nil)
	add("totals", ev.Totals != nil, ev.Totals != nil)
	if len(f) == 0 {
		return string(ev.Kind)
	}
	return string(ev.Kind) + " " + strings.Join(f, " ")
}
