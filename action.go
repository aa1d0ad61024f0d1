package polyloop

import (
	"encoding/json"
	"fmt"
)

// Action is what a model asked to do: either a tool call (Tool and Args) or a
// code action (Lang and Code, with Tool empty).
type Action struct {
	// CallID is the provider's tool-call id the observation answers; empty
	// when the action did not come from a native tool call.
	CallID string          `json:"call_id,omitempty"`
	Tool   string          `json:"tool,omitempty"`
	Args   json.RawMessage `json:"args,omitempty"`
	Code   string          `json:"code,omitempty"`
	Lang   string          `json:"lang,omitempty"`
}

// IsCode reports whether the action is a code action rather than a tool call.
func (a Action) IsCode() bool { return a.Tool == "" }

// Equal reports whether two actions are the same, comparing Args as JSON text.
func (a Action) Equal(b Action) bool {
	return a.CallID == b.CallID && a.Tool == b.Tool && string(a.Args) == string(b.Args) &&
		a.Code == b.Code && a.Lang == b.Lang
}

// ActionStatus says whether and how an action ran (see ActionExecutor).
type ActionStatus string

// The three action statuses.
const (
	// Executed: the action ran, whatever its result.
	Executed ActionStatus = "executed"
	// NotExecuted: the action did not start. It MUST NOT be used if the
	// action may have started (see ActionExecutor).
	NotExecuted ActionStatus = "not_executed"
	// EnvError: the environment is broken; the run finishes env_error.
	EnvError ActionStatus = "env_error"
)

// Valid reports whether s is one of the three statuses.
func (s ActionStatus) Valid() bool {
	return s == Executed || s == NotExecuted || s == EnvError
}

// ActionOutcome is what an executor returns for an action it handled.
type ActionOutcome struct {
	Status ActionStatus `json:"status"`
	// Observation is the executor's text. For Executed the library keeps it
	// as the log reads it back (ValidText), within the snapshot's
	// ObservationLimit and MaxObservationBytes (a longer text is cut, with a
	// note). For NotExecuted and EnvError it is kept as the step's audit
	// (at most MaxAuditBytes) and goes to events; the history gets the
	// agent's synthetic text.
	Observation string `json:"observation,omitempty"`
	// Done is the environment's completion signal; it ends the run with
	// StopCompleted when the status is Executed.
	Done bool `json:"done,omitempty"`
	// TruncatedChars counts characters the executor itself dropped.
	TruncatedChars int `json:"truncated_chars,omitempty"`
}

// Decision is what a DecisionParser made of a reply: exactly one of Act,
// Final or Invalid. The interface is sealed.
type Decision interface {
	decision()
	// Kind names the decision: "act", "final" or "invalid".
	Kind() DecisionKind
}

// DecisionKind names a decision.
type DecisionKind string

// The decision kinds.
const (
	DecisionAct     DecisionKind = "act"
	DecisionFinal   DecisionKind = "final"
	DecisionInvalid DecisionKind = "invalid"
)

// Act asks for a batch of actions: one per tool call of the reply, in the
// reply's order (usually one). Each is its own execution, with its own
// intent, outcome and replay policy.
type Act struct{ Actions []Action }

// ActOne is an Act of one action.
func ActOne(a Action) Act { return Act{Actions: []Action{a}} }

// Final ends the run with an answer.
type Final struct{ Answer string }

// Invalid sends feedback back to the model; the run continues.
type Invalid struct{ Feedback string }

func (Act) decision()     {}
func (Final) decision()   {}
func (Invalid) decision() {}

// Kind implements Decision.
func (Act) Kind() DecisionKind { return DecisionAct }

// Kind implements Decision.
func (Final) Kind() DecisionKind { return DecisionFinal }

// Kind implements Decision.
func (Invalid) Kind() DecisionKind { return DecisionInvalid }

// ReplayPolicy says whether an action whose outcome is unknown after a crash
// may be executed again on resume.
type ReplayPolicy string

// The replay policies. The zero value is treated as NeverReplay.
const (
	// ReplaySafe: the action may run again when its outcome is unknown.
	// A tool MUST NOT be declared ReplaySafe if running it twice could
	// differ from running it once (in its effect on the world, not merely
	// in its observation): a read, or a write keyed so that a second one
	// finds the first, may be; a payment, a message sent, an append may not.
	ReplaySafe ReplayPolicy = "replay_safe"
	// NeverReplay: an action of unknown outcome is never run again; the run
	// finishes with StopResumeStateUnknown.
	NeverReplay ReplayPolicy = "never_replay"
	// ReplayIdempotent: the tool passes the action's idempotency key
	// (IdempotencyKeyFromContext, the MCP request's _meta, the shell's
	// POLYLOOP_IDEMPOTENCY_KEY) to the system it acts on, which applies one
	// key once: an action of unknown outcome runs again with the same key,
	// and the second request finds the first. A tool that does not pass the
	// key on MUST NOT be declared idempotent. Since log format 1.3.
	ReplayIdempotent ReplayPolicy = "idempotent"

	// RestoreAndReplay: the tool acts only inside the run's environment,
	// which has no network (NetworkNone): an action of unknown outcome is
	// run again after the environment is restored to the snapshot its
	// intent names (ActionIntent.EnvSnapshot), the state before its
	// effect, so running it again is running it once. It is the default of
	// the tools that run inside such an environment (shellexec with
	// Options.InEnvironment); an agent with a tool of this policy and no
	// network-isolated environment is refused (SPEC §13). Since log 1.3.
	RestoreAndReplay ReplayPolicy = "restore_and_replay"
)

func (p ReplayPolicy) normalize() ReplayPolicy {
	switch p {
	case ReplaySafe, ReplayIdempotent, RestoreAndReplay:
		return p
	}
	return NeverReplay
}

// replayable reports whether an action of unknown outcome under the policy
// runs again on resume.
func (p ReplayPolicy) replayable() bool {
	p = p.normalize()
	return p == ReplaySafe || p == ReplayIdempotent || p == RestoreAndReplay
}

func (p ReplayPolicy) validate() error {
	switch p {
	case "", ReplaySafe, NeverReplay, ReplayIdempotent, RestoreAndReplay:
		return nil
	}
	return fmt.Errorf("polyloop: unknown replay policy %q (want %q, %q, %q or %q)", string(p), ReplaySafe, NeverReplay, ReplayIdempotent, RestoreAndReplay)
}
