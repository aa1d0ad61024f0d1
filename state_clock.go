package polyloop

import "time"

// runClock is the part of the log's fold that the time limits read: when
// the run started and how long its model calls and actions took, from the
// times their records hold. The machine reads no clock: these are facts
// of the log, and the driver's clock (machine.now) is the only other time
// the limits compare with.
//
// A model call took from its intent's time to its result's; an action
// from its intent's time to its outcome's. An approved action's intent is
// written after the approval, and a delivered or denied action has none,
// so the waits at gates are not counted. A call or action of unknown
// outcome (an orphaned intent: its time ended in a crash) counts nothing;
// the actions of a parallel batch count each its own time.
type runClock struct {
	started   time.Time     // run_started's time (zero in a log without times)
	callStart time.Time     // the time of the open model-call intent
	actions   []time.Time   // the times of the open batch's intents, by index
	working   time.Duration // the model calls' and actions' time so far
}

// span is the time from start to end, or nothing when either is unknown
// (a record without a time) or the clock went back.
func span(start, end time.Time) time.Duration {
	if start.IsZero() || end.IsZero() || end.Before(start) {
		return 0
	}
	return end.Sub(start)
}

// clockFold folds a record's time; it runs before the fold proper, while
// the batch still holds the action a settlement names.
func (st *logState) clockFold(r Record) {
	if r.At.IsZero() {
		return // a record the running loop has not stamped: a run without a time limit
	}
	c := &st.clock
	switch b := r.Body.(type) {
	case *RunStarted:
		c.started = r.At
	case *ModelCallIntent:
		c.callStart = r.At
		c.actions = c.actions[:0]
	case *ModelCallResult:
		c.working += span(c.callStart, r.At)
		c.callStart = time.Time{}
	case *ActionIntent:
		for len(c.actions) <= b.Index {
			c.actions = append(c.actions, time.Time{})
		}
		c.actions[b.Index] = r.At
	case *ActionResult:
		st.clockSettle(&b.SettledAction, r.At)
	case *StepCompleted:
		if b.Outcome != nil {
			st.clockSettle(&b.SettledAction, r.At)
		}
	}
}

// clockSettle adds the time of an action that ran, settled at end.
func (st *logState) clockSettle(s *SettledAction, end time.Time) {
	c := &st.clock
	i, ok := st.settles(s)
	if !ok || st.batch[i].intent == nil || i >= len(c.actions) {
		return // settled at its gate, without running
	}
	c.working += span(c.actions[i], end)
	c.actions[i] = time.Time{}
}

// elapsed is the run's wall clock at now, from its run_started's time
// (zero when the log holds no start time).
func (c *runClock) elapsed(now time.Time) time.Duration {
	if c.started.IsZero() || now.IsZero() {
		return 0
	}
	return now.Sub(c.started)
}

// clocked reports whether a snapshot has a time limit: the machine then
// reads the driver's clock before each step and stamps its records with
// it, so that the fold sees their times as the log will hold them.
func (l Limits) clocked() bool { return l.TimeLimit > 0 || l.WorkingLimit > 0 }

// bootClocked reports whether records that boot a run (a new run's
// run_started) start it under a time limit.
func bootClocked(recs []Record) bool {
	for _, r := range recs {
		if startsClocked(r.Body) {
			return true
		}
	}
	return false
}

// startsClocked reports whether b is a run_started under a time limit.
func startsClocked(b RecordBody) bool {
	rs, ok := b.(*RunStarted)
	return ok && rs.Snapshot.Limits.clocked()
}

// stampRecord gives a record, under a time limit, the time of the write it
// goes in, as the driver would when writing it, so that the fold sees the
// times the log will hold: the records of one write share one time (a
// log's readers find its writes by them, docs/log-format.md), the time of
// its first record — the machine's now when it was added (the driver
// tells the time before each step and each fact), or its own (a fork's
// copies, a record the driver stamped).
func (m *machine) stampRecord(r *Record) {
	if len(m.pending) == 0 {
		m.writeAt = r.At
		if m.writeAt.IsZero() {
			m.writeAt = m.now
		}
	}
	if r.At.IsZero() {
		r.At = m.writeAt
	}
}
