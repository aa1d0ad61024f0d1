package anthropicmodel

import "github.com/polyloop/polyloop/internal/provider"

// DefaultUnansweredToolResult is the result sent for a tool call that the
// history does not answer (see Options.UnansweredToolResult).
const DefaultUnansweredToolResult = provider.DefaultUnansweredToolResult

// DefaultEmptyObservation is the text sent for an observation without
// visible characters (see Options.EmptyObservation).
const DefaultEmptyObservation = "(no output)"
