// Package replaymodel is a polyloop.ModelClient that answers from the
// ModelCallResults of a recorded run instead of calling a model. It lets a
// user re-run a new parser or a new executor over recorded trajectories
// without spending money: the model's side of the conversation is replayed,
// everything else runs for real.
//
// # Which reply
//
// The reply to a request is the recorded result of the request's step. The
// library asks steps in order, so the replies come in the recorded order; a
// retried call of a step (a resume after a crash) gets the same reply again,
// and the client keeps no state between calls, so a new client from the same
// log serves a resumed replay run (Resume continues one that Replay did
// not finish). Replies carry the recorded usage, cost,
// model id and attempts, so token and cost budgets stop a replay where they
// stopped the recorded run.
//
// A recorded failure is replayed as a failure: Complete returns a
// *RecordedFailureError (errors.Is ErrRecordedFailure) that carries the
// recorded diagnostic and exposes its fields through diag.Fielder, so the
// replay run finishes with llm_error at the same step, as the recorded run
// did. A step the recorded run has no result for (it ended earlier, or
// crashed during that call) gives an error for which errors.Is(err,
// ErrExhausted) holds.
//
// # Divergence
//
// Before answering step n, the client compares the request with what the
// recorded model was shown at step n: polyloop.History of the recorded log
// up to step n's result. If they differ the recorded reply would answer a
// conversation that did not happen, so Complete returns a *DivergenceError
// (errors.Is ErrDiverged) that names the step, the message index and what
// differs. In a run, like every model error, it finishes the run with
// llm_error and its text is in the recorded failure.
//
// Options.Match chooses what must agree:
//
//   - MatchStructure (the default) compares the trajectory: the same number
//     of messages, in the same roles; the task; the assistant messages (the
//     model's own replies, text and tool calls) exactly; the tool-call id of
//     each observation; and which steps were Invalid (feedback messages). The
//     system prompt and the texts of observations and feedback may differ:
//     they are what a new parser or executor changes. A different decision
//     kind at some step (Invalid where the recorded run acted, an extra or a
//     missing step) is a divergence.
//   - MatchExact also compares every message's content and flags, the
//     system prompt, the tool specs and the model parameters: the replay is
//     the recorded run, byte for byte, as far as the model could tell.
//   - MatchSteps compares nothing but the step: the recorded replies are
//     replayed whatever the conversation became.
package replaymodel
