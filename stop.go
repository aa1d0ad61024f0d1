package polyloop

// StopReason says why a run finished.
type StopReason string

// The stop reasons.
const (
	StopCompleted   StopReason = "completed"
	StopMaxSteps    StopReason = "max_steps"
	StopTokenBudget StopReason = "token_budget"
	StopCostBudget  StopReason = "cost_budget"
	// StopTimeLimit: the run's wall clock since its run_started reached
	// Limits.TimeLimit; StopWorkingLimit: the time its model calls and
	// actions took reached Limits.WorkingLimit (log format 1.3).
	StopTimeLimit          StopReason = "time_limit"
	StopWorkingLimit       StopReason = "working_limit"
	StopLLMError           StopReason = "llm_error"
	StopEnvError           StopReason = "env_error"
	StopResumeStateUnknown StopReason = "resume_state_unknown"
)

// Valid reports whether r is one of the stop reasons.
func (r StopReason) Valid() bool {
	switch r {
	case StopCompleted, StopMaxSteps, StopTokenBudget, StopCostBudget, StopTimeLimit, StopWorkingLimit, StopLLMError, StopEnvError, StopResumeStateUnknown:
		return true
	}
	return false
}

// Totals are computed from the log (see ComputeTotals): a resumed run's
// totals cover the whole log.
//
// Tokens and cost are sums over what is known. They are a lower bound, never
// the total, whenever the log holds a model call whose usage is not known:
//   - TokensUnknown is true when the log has a model call of unknown outcome
//     (an intent without its result: the provider may have answered and
//     billed), a reply or failed call that reports no usage at all (no
//     input, output or cached tokens), or one whose usage is a lower bound
//     (Usage.TokensUnknown: an attempt was sent and then timed out, lost its
//     connection or was cut short, and may have been billed for what it
//     never reported).
//   - CostUnknown is true when TokensUnknown is, or when a call's usage is
//     known but its cost is not (no price for the model, a provider that
//     reports none) — a reply, or a failed call that recorded what it
//     consumed —, or when a call failed without usage and no result of the
//     log carried a cost (nothing says the model has a price).
//
// A failed call that recorded no usage is taken as not billed: the request
// never reached the provider (a refused connection) or it answered with an
// error status, which providers do not bill. It adds nothing to the sums. A client whose request was
// sent and got no complete answer (a timeout, a dropped connection, a reply
// cut short), or that received a reply and refused it, records what the call
// consumed (UsageCarrier), with Usage.TokensUnknown when that is only a
// lower bound.
type Totals struct {
	// Steps counts StepCompleted records.
	Steps int `json:"steps"`
	// ModelCalls counts ModelCallResult records; Actions counts the
	// actions whose outcome is recorded.
	ModelCalls int `json:"model_calls"`
	Actions    int `json:"actions"`
	// InputTokens and OutputTokens sum the known usage of the model calls,
	// failed calls' included.
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// TokensUnknown: the token sums are a lower bound (see above).
	TokensUnknown bool `json:"tokens_unknown,omitempty"`
	// CostUSD sums the known costs; CostUnknown: it is a lower bound.
	CostUSD     float64 `json:"cost_usd"`
	CostUnknown bool    `json:"cost_unknown,omitempty"`
	// UnknownModelCalls counts model-call intents without a result (calls
	// of unknown outcome); UnknownActions counts action intents without an
	// outcome (actions of unknown outcome).
	UnknownModelCalls int `json:"unknown_model_calls,omitempty"`
	UnknownActions    int `json:"unknown_actions,omitempty"`
	// CopiedSteps counts, in a fork, the steps copied from its source. A
	// fork's other totals count only its own records: what the copies used
	// is counted once, in the source's totals.
	CopiedSteps int `json:"copied_steps,omitempty"`
	// Reconciled counts the actions of unknown outcome a reconciler
	// answered for (action_reconciled), by what the run did: the outcome
	// it reported adopted, the action run again (it had not happened), or
	// still unknown (the run finished resume_state_unknown).
	Reconciled ReconciledCounts `json:"reconciled,omitzero"`
}

// ReconciledCounts counts reconciliations by resolution.
type ReconciledCounts struct {
	Adopted int `json:"adopted"`
	Rerun   int `json:"rerun"`
	Unknown int `json:"still_unknown"`
}

// Total is the number of reconciliations.
func (c ReconciledCounts) Total() int { return c.Adopted + c.Rerun + c.Unknown }

// Tokens is input plus output tokens.
func (t Totals) Tokens() int64 { return t.InputTokens + t.OutputTokens }

// RunResult is what Run and Resume return when the run finished — or, when
// Suspended is set, when it waits at a gate: StopReason is then empty (a
// suspended run is not finished) and Resume goes on once Approve or Deliver
// answered.
type RunResult struct {
	RunID      string     `json:"run_id"`
	StopReason StopReason `json:"stop_reason,omitempty"`
	// Suspended lists what a suspended run waits for.
	Suspended   *Suspension `json:"suspended,omitempty"`
	FinalAnswer string      `json:"final_answer,omitempty"`
	// Totals are the whole log's, as RunFinished records them (for a
	// suspended run, so far). Their token and cost sums are lower bounds
	// when TokensUnknown or CostUnknown is set (see Totals): report them
	// as "at least", never as the spend.
	Totals Totals `json:"totals"`
	// Sinks reports event delivery failures of this invocation.
	Sinks []SinkReport `json:"sinks,omitempty"`
	// Plan is the resume plan followed (nil for Run).
	Plan *ResumePlan `json:"plan,omitempty"`
	// Records is the number of records in the run's log.
	Records int64 `json:"records"`
}

// SinkReport counts the delivery failures of one sink.
type SinkReport struct {
	// Sink is the sink's index in Runner.Sinks and its Go type.
	Index    int    `json:"index"`
	Sink     string `json:"sink"`
	Errors   int    `json:"errors,omitempty"`
	Panics   int    `json:"panics,omitempty"`
	Timeouts int    `json:"timeouts,omitempty"`
	Disabled bool   `json:"disabled,omitempty"`
	// LastFailure is a short description of the last failure. It is only in
	// the RunResult of the invocation that saw the failure, never in the
	// RunFinished record: a sink's error text is not known to be free of
	// secrets.
	LastFailure string `json:"last_failure,omitempty"`
}
