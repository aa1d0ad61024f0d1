package polyloop

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Reconciler is the optional seam through which resume asks the world
// whether an action of unknown outcome happened (SPEC §14). An
// ActionExecutor implements it when the systems it acts on can be asked —
// a payment service looked up by idempotency key, a table with a unique
// constraint, an MCP server with a lookup tool; an executor that serves
// several tools answers VerdictUnknown for the tools it cannot reconcile.
//
// When it is asked: Resume asks it, before writing the run off as
// resume_state_unknown, about every action of the open batch whose intent
// has no outcome and whose replay policy is never_replay (a replay_safe or
// idempotent action simply runs again). It is asked once per action and
// intent: the answer is recorded (ActionReconciled) and never asked again.
//
// Contract:
//   - Reconcile reports what happened to the action of the query, as the
//     world records it, and nothing it guesses. VerdictCompleted: the
//     effect happened; Outcome MUST be set, with the status Executed or
//     EnvError (the observation the action would have returned: it is
//     adopted as the action's outcome, settled as if Execute had returned
//     it). VerdictNotHappened: the world holds no trace of the effect and
//     none can arrive later (the key is refused from now on, or the request
//     never left); the action then runs again, under a new intent with the
//     same idempotency key. VerdictUnknown: it cannot tell (no record of
//     the key yet may still mean a request in flight); the run finishes
//     resume_state_unknown, as without a reconciler.
//   - A Verdict outside these (an unknown kind, VerdictCompleted without an
//     outcome or with NotExecuted) is refused with ErrInvalidVerdict, which
//     propagates out of Resume; nothing is recorded.
//   - Failures: a non-nil error is outside the protocol, as an executor's
//     (§3.3): it propagates out of Resume untouched (errors.Is/As reach
//     it), nothing is recorded, and the log stays at intent-without-outcome.
//     A reconciler that cannot reach the system it asks MUST NOT answer
//     VerdictNotHappened: it answers VerdictUnknown or an error.
//   - Cancellation: when ctx is done, Reconcile returns promptly with an
//     error satisfying errors.Is(err, ctx.Err()).
//   - Ownership: the query is the caller's (Action.Args included); the
//     verdict, Outcome included, becomes the library's.
//   - Concurrency: Resume asks one question at a time per run; an executor
//     shared by several runners MUST be safe for concurrent use.
//
// polylooptest.Reconciler is the conformance kit.
type Reconciler interface {
	Reconcile(ctx context.Context, q ReconcileQuery) (Verdict, error)
}

// ReconcileScope is implemented by a Reconciler that answers for some
// actions only (an executor of several tools, some of which can be
// reconciled): Reconciles reports whether it is worth asking about an
// action. An action it does not reconcile is written off as before
// (resume_state_unknown), with no action_reconciled record. Without it,
// a Reconciler is asked about every never_replay action of unknown
// outcome. It must be a pure function of the action, safe for concurrent
// use.
type ReconcileScope interface {
	Reconciles(a Action) bool
}

// reconcilerScope is the predicate of the actions an executor is asked
// about, or nil when it does not reconcile.
func reconcilerScope(ex ActionExecutor) func(Action) bool {
	if _, ok := ex.(Reconciler); !ok {
		return nil
	}
	if sc, ok := ex.(ReconcileScope); ok {
		return sc.Reconciles
	}
	return func(Action) bool { return true }
}

// ReconcileQuery is what a Reconciler is asked: the action of an intent
// without an outcome, with its idempotency key.
type ReconcileQuery struct {
	RunID    string
	Step     int
	ActionID string
	// Attempt is the attempt of the intent asked about.
	Attempt int
	Action  Action
	// Key is the idempotency key the action was executed with.
	Key string
}

// VerdictKind is a reconciler's answer.
type VerdictKind string

// The verdicts.
const (
	// VerdictCompleted: the action happened; its outcome is adopted.
	VerdictCompleted VerdictKind = "completed"
	// VerdictNotHappened: the action did not happen; it runs.
	VerdictNotHappened VerdictKind = "not_happened"
	// VerdictUnknown: the reconciler cannot tell; the run finishes
	// resume_state_unknown.
	VerdictUnknown VerdictKind = "unknown"
)

// Verdict is a reconciler's answer to a ReconcileQuery.
type Verdict struct {
	Kind VerdictKind `json:"verdict"`
	// Outcome is the action's outcome, for VerdictCompleted only.
	Outcome *ActionOutcome `json:"outcome,omitempty"`
	// Said is what the world said, in its words, for people (bounded to
	// MaxAuditBytes in the record); it never enters the history.
	Said string `json:"said,omitempty"`
}

// ErrInvalidVerdict is returned (and propagates out of Resume) when a
// reconciler answers outside its contract: an unknown verdict, or
// "completed" without an outcome or with one that says the action did not
// run.
var ErrInvalidVerdict = errors.New("polyloop: reconciler returned an invalid verdict")

// check refuses a verdict outside the Reconciler contract.
func (v Verdict) check() error {
	switch v.Kind {
	case VerdictNotHappened, VerdictUnknown:
		if v.Outcome != nil {
			return fmt.Errorf("%w: %s with an outcome", ErrInvalidVerdict, v.Kind)
		}
		return nil
	case VerdictCompleted:
		switch {
		case v.Outcome == nil:
			return fmt.Errorf("%w: completed without an outcome", ErrInvalidVerdict)
		case v.Outcome.Status != Executed && v.Outcome.Status != EnvError:
			return fmt.Errorf("%w: completed with status %q", ErrInvalidVerdict, v.Outcome.Status)
		}
		return nil
	}
	return fmt.Errorf("%w: verdict %q", ErrInvalidVerdict, v.Kind)
}

// Resolution is what a run did with a reconciler's verdict.
type Resolution string

// The resolutions, one per verdict.
const (
	// ResolutionAdopted: the outcome the world reported settles the action.
	ResolutionAdopted Resolution = "adopted"
	// ResolutionRerun: the action runs again, with the same key.
	ResolutionRerun Resolution = "rerun"
	// ResolutionUnknown: the run finishes resume_state_unknown.
	ResolutionUnknown Resolution = "still_unknown"
)

// resolution is what the run does with a verdict.
func (k VerdictKind) resolution() Resolution {
	switch k {
	case VerdictCompleted:
		return ResolutionAdopted
	case VerdictNotHappened:
		return ResolutionRerun
	}
	return ResolutionUnknown
}

// ActionReconciled records a reconciliation: what was asked (the action
// and intent attempt, the key), what the world said (the verdict, its own
// words) and what the run did. An adopted outcome follows in the same write
// as the action's ordinary settlement (ActionResult or StepCompleted, of
// the attempt asked about); a re-run, as the action's next intent; an
// unknown verdict, as run_finished resume_state_unknown. Since 1.3.
type ActionReconciled struct {
	Step     int         `json:"step"`
	ActionID string      `json:"action_id"`
	Attempt  int         `json:"attempt"`
	Key      string      `json:"idempotency_key"`
	Verdict  VerdictKind `json:"verdict"`
	// Status is the adopted outcome's status, for a completed verdict.
	Status     ActionStatus `json:"status,omitempty"`
	Said       string       `json:"said,omitempty"`
	Resolution Resolution   `json:"resolution"`
}

// KindActionReconciled is the kind of ActionReconciled records.
const KindActionReconciled RecordKind = "action_reconciled"

func (*ActionReconciled) recordBody() {}

// Kind implements RecordBody.
func (*ActionReconciled) Kind() RecordKind { return KindActionReconciled }

// Validate implements RecordBody.
func (b *ActionReconciled) Validate() error {
	if b.Step < 1 || b.ActionID == "" || b.Attempt < 1 || b.Key == "" {
		return fmt.Errorf("action_reconciled: step %d, action_id %q, attempt %d, key %q", b.Step, b.ActionID, b.Attempt, b.Key)
	}
	switch b.Verdict {
	case VerdictCompleted, VerdictNotHappened, VerdictUnknown:
	default:
		return fmt.Errorf("action_reconciled: unknown verdict %q", b.Verdict)
	}
	if b.Resolution != b.Verdict.resolution() {
		return fmt.Errorf("action_reconciled: resolution %q for verdict %q", b.Resolution, b.Verdict)
	}
	if (b.Verdict == VerdictCompleted) != (b.Status != "") || (b.Status != "" && b.Status != Executed && b.Status != EnvError) {
		return fmt.Errorf("action_reconciled: status %q for verdict %q", b.Status, b.Verdict)
	}
	return nil
}

// IdempotencyKeyFor is the idempotency key of the execution of action
// actionID, attempt attempt, of run runID: "plk_" and 32 hex digits of a
// SHA-256 of the three. An intent records the key it is executed with
// (ActionIntent.IdempotencyKey); its first attempt derives it, and every
// replay of the same action carries it on, so that a second request finds
// the first.
func IdempotencyKeyFor(runID, actionID string, attempt int) string {
	var in [160]byte
	b := append(in[:0], runID...)
	b = append(b, 0)
	b = append(b, actionID...)
	b = append(b, 0)
	b = strconv.AppendInt(b, int64(attempt), 10)
	sum := sha256.Sum256(b)
	var out [4 + 32]byte
	copy(out[:], "plk_")
	hex.Encode(out[4:], sum[:16])
	return string(out[:])
}

// key is the idempotency key the intent is executed with: the one it
// records, or, in a log of a format before 1.3, the key derived from it.
func (b *ActionIntent) key(runID string) string {
	if b.IdempotencyKey != "" {
		return b.IdempotencyKey
	}
	return IdempotencyKeyFor(runID, b.ActionID, b.Attempt)
}

// IdempotencyKeyFromContext returns the idempotency key of the action being
// executed, when ctx comes from the runner's call to Execute (a Go function
// tool passes it to the API it calls: an Idempotency-Key header, a unique
// constraint).
func IdempotencyKeyFromContext(ctx context.Context) (string, bool) {
	if k, ok := ctx.Value(keyOverride{}).(string); ok {
		return k, true
	}
	info, ok := ActionFromContext(ctx)
	if !ok || info.IdempotencyKey == "" {
		return "", false
	}
	return info.IdempotencyKey, true
}

// VerdictJSON is the JSON shape in which a reconcile command (shell) or a
// companion lookup tool (MCP) reports its verdict (docs/agent-file.md):
//
//	{"verdict": "completed", "status": "executed", "observation": "charged ch_1", "said": "…"}
//	{"verdict": "not_happened", "said": "no charge under the key"}
//	{"verdict": "unknown", "said": "the service cannot tell yet"}
//
// status is "executed" (the default) or "env_error", for "completed" only;
// observation is the outcome's text, adopted as the action's observation;
// said is for people.
type VerdictJSON struct {
	Verdict     VerdictKind  `json:"verdict"`
	Status      ActionStatus `json:"status,omitempty"`
	Observation *string      `json:"observation,omitempty"`
	Said        string       `json:"said,omitempty"`
}

// ParseVerdict reads a verdict in the VerdictJSON shape. A text that is not
// that object, an unknown verdict, or "completed" without an observation
// is an error wrapping ErrInvalidVerdict.
func ParseVerdict(data []byte) (Verdict, error) {
	var j VerdictJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return Verdict{}, fmt.Errorf("%w: not a verdict object: %v", ErrInvalidVerdict, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Verdict{}, fmt.Errorf("%w: more after the verdict object", ErrInvalidVerdict)
	}
	v := Verdict{Kind: j.Verdict, Said: j.Said}
	if j.Verdict == VerdictCompleted {
		if j.Observation == nil {
			return Verdict{}, fmt.Errorf("%w: completed without an observation", ErrInvalidVerdict)
		}
		status := j.Status
		if status == "" {
			status = Executed
		}
		v.Outcome = &ActionOutcome{Status: status, Observation: *j.Observation}
	} else if j.Observation != nil || j.Status != "" {
		return Verdict{}, fmt.Errorf("%w: %s with an outcome", ErrInvalidVerdict, j.Verdict)
	}
	return v, v.check()
}

type keyOverride struct{}

// WithIdempotencyKey returns a context under which IdempotencyKeyFromContext
// reports key: for executing an action outside a run (a test, a tool run by
// hand, a conformance kit) with a key of the caller's. The runner never
// uses it; within a run the key is the intent's.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyOverride{}, key)
}
