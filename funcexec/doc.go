// Package funcexec runs Go functions as typed tools: a polyloop.ActionExecutor
// whose tools are registered with Register.
//
// Each tool is a func(ctx, Args) (string, error). The JSON Schema of its
// parameters is generated from the Args type with
// github.com/google/jsonschema-go, and every call's arguments are validated
// against that schema before the function runs. ToolSpecs returns the specs
// of the registered tools: the Executor is a polyloop.ToolLister, so a
// polyloop.Runner takes an agent's tools from it when Agent.Tools is empty,
// and refuses (polyloop.ErrInvalidConfig) an agent whose tools differ from
// the registered ones — a tool on one side only, another description, schema
// or replay policy. What the model is shown, what runs and the replay policy
// the log records come from the same registration and cannot drift. A tool
// registered after a run started is not in that run's snapshot.
//
// Status mapping (see polyloop.ActionExecutor):
//
//   - a code action (Tool empty), an unknown tool name, arguments that are not
//     JSON, fail the schema, or do not decode into Args → NotExecuted, with an
//     Observation saying why (it goes to the event stream for audit; the
//     model's history gets the agent's synthetic text);
//   - the function returns a nil error → Executed with the returned string;
//   - the function returns an error → Executed with the error's text: the
//     action ran and failed, and the model may correct itself;
//   - the function returns an error wrapped with EnvError (detected with
//     errors.As, anywhere in the chain) → EnvError, which ends the run;
//   - the function returns an error that polyloop.MustPropagate reports (a
//     *polyloop.PersistenceError, or a *polyloop.ChildError from
//     polyloop.InvokeChild) → that error is returned, outside the protocol:
//     a mechanism failure is never made an observation;
//   - ctx is done and the function returns an error → that error is returned,
//     wrapping ctx.Err(), outside the protocol. A function that completes
//     despite cancellation has really run: its outcome is returned as usual.
//   - a panic in the function is not recovered: it propagates to the caller,
//     as the contract requires.
//
// Observations are kept as the log keeps them and bounded: bytes that are
// not UTF-8 become U+FFFD (polyloop.ValidText), so the model sees live what
// a resumed run reads back, and a text longer than
// polyloop.MaxObservationBytes is cut at a character boundary with a last
// line "[output truncated: N characters dropped]", N counted in
// TruncatedChars, so that its step record always fits in the log.
//
// Functions should honour ctx: funcexec cannot stop a Go function that
// ignores its context.
package funcexec
