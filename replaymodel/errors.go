package replaymodel

import (
	"errors"
	"fmt"
	"maps"
	"strconv"

	"github.com/polyloop/polyloop/diag"
)

// Sentinel errors of Complete. Test for them with errors.Is.
var (
	// ErrDiverged: the request differs from what the recorded model was
	// shown. Returned errors are *DivergenceError values.
	ErrDiverged = errors.New("replaymodel: request diverges from the recorded run")
	// ErrRecordedFailure: the recorded call of the step failed. Returned
	// errors are *RecordedFailureError values.
	ErrRecordedFailure = errors.New("replaymodel: recorded model failure")
	// ErrExhausted: the recorded run has no result for the step.
	ErrExhausted = errors.New("replaymodel: no recorded reply")
)

// maxExcerpt bounds the recorded and requested texts a DivergenceError
// quotes.
const maxExcerpt = 160

// DivergenceError says where a request departs from the recorded run.
type DivergenceError struct {
	// RunID is the recorded run; Step the step asked for.
	RunID string
	Step  int
	// Message is the index in the request's Messages of the first message
	// that differs, or -1 when the difference is not in a message.
	Message int
	// What names what differs: "message count", "role", "content",
	// "tool_calls", "tool_call_id", "synthetic", "feedback", "tools",
	// "params".
	What string
	// Recorded and Got are short excerpts of the two sides.
	Recorded, Got string
}

func (e *DivergenceError) Error() string {
	where := "in " + e.What
	if e.Message >= 0 {
		where = fmt.Sprintf("at message %d (%s)", e.Message, e.What)
	}
	return fmt.Sprintf("replaymodel: request for step %d diverges from recorded run %q %s: recorded %s, got %s",
		e.Step, e.RunID, where, e.Recorded, e.Got)
}

// Is makes errors.Is(err, ErrDiverged) true.
func (e *DivergenceError) Is(target error) bool { return target == ErrDiverged }

// DiagFields implements diag.Fielder.
func (e *DivergenceError) DiagFields() map[string]string {
	return map[string]string{
		"replay_run_id": e.RunID, "replay_step": strconv.Itoa(e.Step),
		"replay_message": strconv.Itoa(e.Message), "replay_diverged": e.What,
	}
}

// RecordedFailureError replays the failure recorded for a step.
type RecordedFailureError struct {
	RunID string
	Step  int
	// Failure is the recorded diagnostic.
	Failure diag.Diagnostic
}

func (e *RecordedFailureError) Error() string {
	return fmt.Sprintf("replaymodel: step %d of recorded run %q failed: %s: %s", e.Step, e.RunID, e.Failure.Type, e.Failure.Message)
}

// Is makes errors.Is(err, ErrRecordedFailure) true.
func (e *RecordedFailureError) Is(target error) bool { return target == ErrRecordedFailure }

// DiagFields implements diag.Fielder: the recorded failure's own fields
// (HTTP status, provider code...) and the replayed step, so that the replay
// run's diagnostic carries what the recorded one did.
func (e *RecordedFailureError) DiagFields() map[string]string {
	f := maps.Clone(e.Failure.Fields)
	if f == nil {
		f = map[string]string{}
	}
	f["replay_run_id"] = e.RunID
	f["replay_step"] = strconv.Itoa(e.Step)
	return f
}

// excerpt quotes s, cut to maxExcerpt bytes on a rune boundary.
func excerpt(s string) string {
	if len(s) <= maxExcerpt {
		return strconv.Quote(s)
	}
	cut := maxExcerpt
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}
