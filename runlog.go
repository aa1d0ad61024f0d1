package polyloop

import (
	"strings"
	"time"
	"unicode/utf8"
)

// RunLog is the log of one run: its records in seq order. An empty log
// (no records) means the run does not exist.
type RunLog struct {
	RunID   string
	Records []Record
}

// Empty reports whether the log has no records.
func (l RunLog) Empty() bool { return len(l.Records) == 0 }

// Started returns the RunStarted record's body, or nil.
func (l RunLog) Started() *RunStarted {
	if len(l.Records) == 0 {
		return nil
	}
	b, _ := l.Records[0].Body.(*RunStarted)
	return b
}

// Finished returns the RunFinished body, or nil for an unfinished run.
func (l RunLog) Finished() *RunFinished {
	if len(l.Records) == 0 {
		return nil
	}
	b, _ := l.Records[len(l.Records)-1].Body.(*RunFinished)
	return b
}

// NextSeq is the sequence number the next record must carry.
func (l RunLog) NextSeq() int64 { return int64(len(l.Records)) }

// ModelResults returns the ModelCallResult bodies in order.
func (l RunLog) ModelResults() []*ModelCallResult { return bodies[*ModelCallResult](l) }

// ActionIntents returns the ActionIntent bodies in order.
func (l RunLog) ActionIntents() []*ActionIntent { return bodies[*ActionIntent](l) }

// ActionResults returns the ActionResult bodies in order.
func (l RunLog) ActionResults() []*ActionResult { return bodies[*ActionResult](l) }

// Steps returns the StepCompleted bodies in order.
func (l RunLog) Steps() []*StepCompleted { return bodies[*StepCompleted](l) }

// Receptions returns the ChildReception bodies in order.
func (l RunLog) Receptions() []*ChildReception { return bodies[*ChildReception](l) }

// Snapshot returns the snapshot in force at the end of the log and its
// hash, as the log's fold has it: the RunStarted one or the last
// ConfigOverride's — in a fork, its own after the records copied from its
// source, whatever they hold. A corrupt log gives the snapshot in force
// before the break.
func (l RunLog) Snapshot() (Snapshot, string) {
	st := foldPrefixWithoutHistory(l)
	return st.snap, st.hash
}

func bodies[T RecordBody](l RunLog) []T {
	var out []T
	for _, r := range l.Records {
		if b, ok := r.Body.(T); ok {
			out = append(out, b)
		}
	}
	return out
}

// RunFilter selects runs for RunLister.ListRuns. Zero fields do not filter.
type RunFilter struct {
	Agent        string
	SnapshotHash string
	// Finished: nil for all runs, true for finished runs only, false for
	// unfinished runs only.
	Finished   *bool
	StopReason StopReason
	// StartedAfter and StartedBefore bound the start time (inclusive,
	// exclusive).
	StartedAfter  time.Time
	StartedBefore time.Time
	// ParentRunID selects the children of a run.
	ParentRunID string
	// TaskContains keeps the runs whose RunSummary.Task contains this text
	// (a case-sensitive substring; it searches the summary's excerpt of
	// the task, its first MaxSummaryTask characters).
	TaskContains string
	// Limit bounds the number of summaries (0: no limit), after ordering.
	Limit int
	// Descending lists the runs in the reverse of the listing order: the
	// latest start first, ties by run id in reverse byte order, runs
	// without a start time last.
	Descending bool
	// After keeps only the runs that come after this position in the order
	// listed (Descending or not): a page's last position gives the next
	// page (keyset pagination, which stores serve from their index on
	// start time and run id).
	After *RunPosition
}

// RunPosition is a run's place in the listing order: by start time (the
// zero time, a run without RunStarted, first), ties by run id compared
// byte by byte.
type RunPosition struct {
	StartedAt time.Time `json:"started_at"`
	RunID     string    `json:"run_id"`
}

// Before reports whether p comes before q in the listing order.
func (p RunPosition) Before(q RunPosition) bool {
	if !p.StartedAt.Equal(q.StartedAt) {
		return p.StartedAt.Before(q.StartedAt)
	}
	return p.RunID < q.RunID
}

// Position is the summary's place in the listing order.
func (s RunSummary) Position() RunPosition {
	return RunPosition{StartedAt: s.StartedAt, RunID: s.RunID}
}

// RunSummary is one run as listed by RunLister: what a listing or
// statistics need without reading the log.
type RunSummary struct {
	RunID        string    `json:"run_id"`
	Agent        string    `json:"agent"`
	SnapshotHash string    `json:"snapshot_hash"`
	StartedAt    time.Time `json:"started_at"`
	// UpdatedAt is the time of the last record.
	UpdatedAt time.Time `json:"updated_at"`
	Records   int64     `json:"records"`
	Finished  bool      `json:"finished"`
	// StopReason and Totals are set for finished runs.
	StopReason  StopReason `json:"stop_reason,omitempty"`
	Totals      *Totals    `json:"totals,omitempty"`
	ParentRunID string     `json:"parent_run_id,omitempty"`
	// Awaiting says what an unfinished run waits for: "approval",
	// "delivery", or both ("approval+delivery"); empty when it waits for
	// nothing. Stores do not keep it: a reader that folds the run's log
	// (PendingGates) sets it.
	Awaiting string `json:"awaiting,omitempty"`
	// Running is the live process that drives an unfinished run now (the
	// live holder of its lease), nil when none does or the store cannot
	// tell. Stores do not keep it: a reader that asks the store's
	// LeaseProber sets it.
	Running *LeaseOwner `json:"running,omitempty"`
	// Task is the start of the task's input: its first MaxSummaryTask
	// characters (runes), for lists and searches; invalid UTF-8 and NUL
	// characters are replaced by U+FFFD.
	Task string `json:"task,omitempty"`
}

// MaxSummaryTask bounds RunSummary.Task, in characters.
const MaxSummaryTask = 1000

// taskExcerpt is the first MaxSummaryTask characters of a task's input,
// each byte of invalid UTF-8 and each NUL replaced by U+FFFD, as
// encoding/json decodes them (so a stored and read-back record gives the
// same excerpt, and every store can keep it as text).
func taskExcerpt(input string) string {
	var b strings.Builder
	for n := 0; n < MaxSummaryTask && input != ""; n++ {
		r, size := utf8.DecodeRuneInString(input)
		if r == 0 || (r == utf8.RuneError && size == 1) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
		input = input[size:]
	}
	return b.String()
}

// Matches reports whether the summary passes the filter (Limit and order
// aside; After in the order Descending says). Stores may use it to filter
// in memory.
func (f RunFilter) Matches(s RunSummary) bool {
	if f.Agent != "" && s.Agent != f.Agent {
		return false
	}
	if f.SnapshotHash != "" && s.SnapshotHash != f.SnapshotHash {
		return false
	}
	if f.Finished != nil && s.Finished != *f.Finished {
		return false
	}
	if f.StopReason != "" && s.StopReason != f.StopReason {
		return false
	}
	if !f.StartedAfter.IsZero() && s.StartedAt.Before(f.StartedAfter) {
		return false
	}
	if !f.StartedBefore.IsZero() && !s.StartedAt.Before(f.StartedBefore) {
		return false
	}
	if f.ParentRunID != "" && s.ParentRunID != f.ParentRunID {
		return false
	}
	if f.TaskContains != "" && !strings.Contains(s.Task, f.TaskContains) {
		return false
	}
	if f.After != nil {
		if f.Descending {
			return s.Position().Before(*f.After)
		}
		return f.After.Before(s.Position())
	}
	return true
}

// Apply folds one record into the summary of its run: stores
// that keep summaries update them with each Append by folding records in. It
// is the single definition of a summary's fields.
func (s *RunSummary) Apply(r Record) {
	s.Records = r.Seq + 1
	s.UpdatedAt = r.At
	switch b := r.Body.(type) {
	case *RunStarted:
		s.RunID = b.RunID
		s.Agent = b.Snapshot.Agent
		s.SnapshotHash = b.SnapshotHash
		s.StartedAt = r.At
		s.Task = taskExcerpt(b.Snapshot.Task.Input)
		if b.Parent != nil {
			s.ParentRunID = b.Parent.RunID
		}
	case *ConfigOverride:
		s.SnapshotHash = b.SnapshotHash
	case *RunFinished:
		s.Finished = true
		s.StopReason = b.StopReason
		t := b.Totals
		s.Totals = &t
	}
}
