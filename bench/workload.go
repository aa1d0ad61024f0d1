package bench

import "github.com/polyloop/polyloop/internal/workload"

// The fixed texts of workload W (defined in package workload).
const (
	// ReplyText is the text of every scripted reply: 200 characters.
	ReplyText = workload.ReplyText
	// Note is the "note" argument of every noop call: 50 characters.
	Note = workload.Note
	// ToolResult is what noop returns: 100 characters.
	ToolResult = workload.ToolResult
	// FinalAnswer is the reply to call S+1.
	FinalAnswer = workload.FinalAnswer
)

// Workload is workload W with Steps action steps (see the package doc). It
// is defined in package workload, which imports no store, so that the
// stores' own tests can run W too.
type Workload = workload.W

// NoopExecutor is W's environment: every action is executed and observes
// ToolResult.
type NoopExecutor = workload.NoopExecutor
