package polyloop

// PlanAction is what Resume will do, as decided by PlanResume.
type PlanAction string

// The plan actions.
const (
	// PlanStartStep: the log ends between steps; run step Step.
	PlanStartStep PlanAction = "start_step"
	// PlanRetryModelCall: a model-call intent has no result; model calls are
	// replayable, so a new intent (attempt Attempt) is written and the orphan
	// stays in the log.
	PlanRetryModelCall PlanAction = "retry_model_call"
	// PlanReparse: a model result has no action intent; the stored reply is
	// parsed again (no side effect happened since) and the run goes on.
	PlanReparse PlanAction = "reparse_reply"
	// PlanReplayAction: an action intent has no step record and its policy is
	// replay_safe; the stored reply is parsed again and the action executed
	// again under a new intent (attempt Attempt) with the same action id.
	PlanReplayAction PlanAction = "replay_action"
	// PlanStopUnknown: an action intent has no step record and its policy is
	// never_replay: whether its side effect happened is unknown; the run
	// finishes with StopResumeStateUnknown.
	PlanStopUnknown PlanAction = "stop_unknown"
	// PlanFinish: the log already determines the finish (env_error, the
	// environment's Done, a Final decision, a failed model call); only the
	// RunFinished record is missing and is written.
	PlanFinish PlanAction = "finish"
	// PlanFinished: the run is finished; nothing runs.
	PlanFinished PlanAction = "finished"
)
