package polyloop

// StopReason says why a run finished.
type StopReason string

// The stop reasons.
const (
	StopCompleted          StopReason = "completed"
	StopMaxSteps           StopReason = "max_steps"
	StopTokenBudget        StopReason = "token_budget"
	StopCostBudget         StopReason = "cost_budget"
	StopLLMError           StopReason = "llm_error"
	StopEnvError           StopReason = "env_error"
	StopResumeStateUnknown StopReason = "resume_state_unknown"
)

// Valid reports whether r is one of the stop reasons.
func (r StopReason) Valid() bool {
	switch r {
	case StopCompleted, StopMaxSteps, StopTokenBudget, StopCostBudget, StopLLMError, StopEnvError, StopResumeStateUnknown:
		return true
	}
	return false
}

// Totals are computed from the log (see ComputeTotals): a resumed run's
// totals cover the whole log.
type Totals struct {
	// Steps counts StepCompleted records.
	Steps int `json:"steps"`
	// ModelCalls counts ModelCallResult records; Actions counts
	// StepCompleted records with an action outcome.
	ModelCalls int `json:"model_calls"`
	Actions    int `json:"actions"`
	// InputTokens and OutputTokens sum the usage of the model results.
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// CostUSD sums the known costs; CostUnknown is true when at least one
	// reply had usage without a known cost.
	CostUSD     float64 `json:"cost_usd"`
	CostUnknown bool    `json:"cost_unknown,omitempty"`
	// UnknownModelCalls counts model-call intents without a result (calls
	// of unknown outcome); UnknownActions counts action intents without a
	// step record (actions of unknown outcome).
	UnknownModelCalls int `json:"unknown_model_calls,omitempty"`
	UnknownActions    int `json:"unknown_actions,omitempty"`
}

// Tokens is input plus output tokens.
func (t Totals) Tokens() int64 { return t.InputTokens + t.OutputTokens }

// RunResult is what Run and Resume return when the run finished.
type RunResult struct {
	RunID       string     `json:"run_id"`
	StopReason  StopReason `json:"stop_reason"`
	FinalAnswer string     `json:"final_answer,omitempty"`
	Totals      Totals     `json:"totals"`
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
