// Package trajectory turns a run log into the per-step view that people
// read: `polyloop show` prints it and `polyloop view` renders it. It is a
// projection of what the log's one fold says of each record
// (polyloop.ObserveLog: which step, which attempt a settlement settles,
// which intent a replay replaces, where an invocation began), plus the
// run's children from the store's listing (Load); it reads no record kind
// of its own and never decides anything about the run.
package trajectory

import (
	"cmp"
	"slices"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/diag"
)

// Trajectory is a run as people read it: its steps, each with its model
// calls, actions and settlement, its configuration overrides, how it ended
// (or what resume would do), and the invocations that wrote it.
type Trajectory struct {
	RunID        string              `json:"run_id"`
	Agent        string              `json:"agent"`
	SnapshotHash string              `json:"snapshot_hash"`
	StartedAt    time.Time           `json:"started_at"`
	Task         string              `json:"task"`
	System       string              `json:"system,omitempty"`
	Parent       *polyloop.ParentRef `json:"parent,omitempty"`
	// ForkedFrom and ReplayOf are the run's source, for a fork (its first
	// steps are copies of the source's, Step.Copied) or a replay.
	ForkedFrom *polyloop.RunSource `json:"forked_from,omitempty"`
	ReplayOf   *polyloop.RunSource `json:"replay_of,omitempty"`
	// Snapshot is the RunStarted snapshot (overrides carry their own).
	Snapshot polyloop.Snapshot `json:"-"`
	Records  int               `json:"records"`
	// Steps are the run's steps (Build), or those of one page (BuildPage):
	// Steps[i] is the run's step number FirstIndex+i counted from 0, of
	// StepCount.
	Steps      []*Step     `json:"steps"`
	FirstIndex int         `json:"-"`
	StepCount  int         `json:"-"`
	Overrides  []*Override `json:"config_overrides,omitempty"`
	// Awaiting lists the gates an unfinished run waits at (approvals,
	// deliveries), with the actions' arguments.
	Awaiting *polyloop.Suspension `json:"awaiting,omitempty"`
	// Takeovers are the lease take-overs the log records.
	Takeovers []*Takeover           `json:"lease_takeovers,omitempty"`
	Finished  *polyloop.RunFinished `json:"finished,omitempty"`
	// UpdatedAt is the time of the last record.
	UpdatedAt time.Time `json:"updated_at"`
	// Totals are computed from the log (for an unfinished run too).
	Totals polyloop.Totals `json:"totals"`
	// Running is the process that drives the run now, the live holder of
	// its lease (Probe); nil when none does or the store cannot tell.
	Running *polyloop.LeaseOwner `json:"running,omitempty"`
	// Plan is what resume would do (unfinished runs no live process
	// drives); PlanError says why the log cannot be planned (a corrupt
	// log).
	Plan      *polyloop.ResumePlan  `json:"plan,omitempty"`
	PlanError string                `json:"plan_error,omitempty"`
	Children  []polyloop.RunSummary `json:"children,omitempty"`
	// Invocations are the processes (or calls of Run and Resume) that
	// wrote the log, inferred from it (see Invocations).
	Invocations []Invocation `json:"invocations,omitempty"`
	// last is the run's last step (in Steps or not).
	last *Step
}

// Page says which of a run's steps BuildPage keeps: page Number (from 1)
// of Per steps; Number 0 is the first page of a finished run and the last
// of an unfinished one (where its steps land).
type Page struct {
	Number, Per int
}

// Override is a config_override record and where it stands in the log,
// with the fields that differ from the snapshot in force before it.
type Override struct {
	*polyloop.ConfigOverride
	Seq int64     `json:"seq"`
	At  time.Time `json:"at"`
	// Diff lists the differing paths (polyloop.DiffSnapshots) between the
	// snapshot in force before the override and the override's.
	Diff []string `json:"diff,omitempty"`
}

// Step is one step: its model calls (orphaned intents included), its action
// intents (replays included; in the reply's order, each action's attempts
// in log order), the gates its actions waited at, the child receptions, and
// its step record.
type Step struct {
	Step       int                     `json:"step"`
	ModelCalls []*Call                 `json:"model_calls"`
	Actions    []*Action               `json:"actions,omitempty"`
	Gates      []*Gate                 `json:"gates,omitempty"`
	Receptions []*Reception            `json:"receptions,omitempty"`
	Completed  *polyloop.StepCompleted `json:"completed,omitempty"`
	// Maintenance is what the step's maintenance recorded: the children it
	// received, its operations, and whether it is done.
	Maintenance *Maintenance `json:"maintenance,omitempty"`
	// Copied marks a step of a fork copied from its source: its calls and
	// actions count in the source's totals, not this run's.
	Copied bool `json:"copied,omitempty"`
	// FirstSeq and LastSeq bound the step's records.
	FirstSeq int64 `json:"first_seq"`
	LastSeq  int64 `json:"last_seq"`
}

// Reply is the reply of the step's answered model call, or nil.
func (s *Step) Reply() *polyloop.ModelReply {
	for i := len(s.ModelCalls) - 1; i >= 0; i-- {
		if r := s.ModelCalls[i].Reply; r != nil {
			return r
		}
	}
	return nil
}

// Maintenance is a step's maintenance: its receptions and operations, in log
// order.
type Maintenance struct {
	Records []MaintenanceRecord `json:"records,omitempty"`
	Done    bool                `json:"done"`
}

// MaintenanceRecord is a reception or an operation of a step's maintenance.
type MaintenanceRecord struct {
	Reception *polyloop.ChildReception `json:"reception,omitempty"`
	Operation *polyloop.MaintenanceOp  `json:"operation,omitempty"`
}

// maintenance is the step's maintenance, made on first use.
func (s *Step) maintenance() *Maintenance {
	if s.Maintenance == nil {
		s.Maintenance = &Maintenance{}
	}
	return s.Maintenance
}

// Call is one model-call intent and its result, if any.
type Call struct {
	CallID  string               `json:"call_id"`
	Attempt int                  `json:"attempt"`
	Seq     int64                `json:"seq"`
	At      time.Time            `json:"at"`
	Reply   *polyloop.ModelReply `json:"reply,omitempty"`
	Failure *diag.Diagnostic     `json:"failure,omitempty"`
	// Usage is what a failed call is known to have consumed.
	Usage *polyloop.Usage `json:"usage,omitempty"`
	// Unknown marks an intent without a result: a call of unknown outcome.
	Unknown bool `json:"unknown,omitempty"`
	// InFlight marks an intent without a result yet in a run a live
	// process drives (MarkRunning): the call is under way.
	InFlight bool `json:"in_flight,omitempty"`
	// View is the view version the call showed.
	View *polyloop.ViewRef `json:"view,omitempty"`
}

// Action is one action intent — an attempt of one action of the step's
// batch — and its settlement, if that attempt was settled. An action
// settled at its gate (denied, or delivered from outside) has no intent:
// Attempt and Seq are 0 and Gate says how it was settled.
type Action struct {
	ActionID string                `json:"action_id"`
	Attempt  int                   `json:"attempt"`
	Index    int                   `json:"index"`
	Of       int                   `json:"of"`
	Seq      int64                 `json:"seq"`
	At       time.Time             `json:"at"`
	Action   polyloop.Action       `json:"action"`
	Replay   polyloop.ReplayPolicy `json:"replay"`
	// Settled is the action's settled outcome (from an action_result or
	// the step record); nil while unknown.
	Settled *polyloop.SettledAction `json:"settled,omitempty"`
	// SettledSeq is the seq of the record that settled it.
	SettledSeq int64 `json:"settled_seq,omitempty"`
	// Unknown marks an intent without a settlement: an action of unknown
	// outcome (a crash, an executor error, or a replay that followed).
	Unknown bool `json:"unknown,omitempty"`
	// InFlight marks an intent without a settlement yet in a run a live
	// process drives (MarkRunning): the action is under way.
	InFlight bool `json:"in_flight,omitempty"`
	// Replayed marks an attempt that a later attempt of the same action
	// replaced.
	Replayed bool `json:"replayed,omitempty"`
	// Gate is the gate the action waited at, if any; AtGate marks an
	// action settled there without an intent (denied, or delivered).
	Gate   *Gate `json:"-"`
	AtGate bool  `json:"at_gate,omitempty"`
	// Reconciled is the reconciler's answer about this attempt (its
	// outcome unknown after a crash), when one was asked.
	Reconciled *polyloop.ActionReconciled `json:"reconciled,omitempty"`
	// Key is the idempotency key the attempt was executed with (empty in
	// logs before 1.3).
	Key string `json:"idempotency_key,omitempty"`
}

// Reception is a child_reception record and its seq.
type Reception struct {
	*polyloop.ChildReception
	Seq int64 `json:"seq"`
}

// Build folds a log into a trajectory: a projection of what the log's fold
// says of each record (polyloop.ObserveLog). A corrupt log gives the
// trajectory of what it holds before the break, with PlanError saying what
// is wrong.
func Build(log polyloop.RunLog) *Trajectory {
	return build(log, nil)
}

// BuildPage is Build keeping only the steps of page p (at most 2×p.Per
// steps while it folds, p.Per after): what it holds does not grow with the
// run's length beyond its invocations, overrides and take-overs. p.Per
// must be positive.
func BuildPage(log polyloop.RunLog, p Page) *Trajectory {
	return build(log, &p)
}

// BuildPageStream is BuildPage of a log read as it is folded, a chunk of
// rows at a time (polyloop.StreamLog): what it holds while it reads is
// what the page keeps and one chunk, whatever the run's length. The error
// is the stream's (a store's failure, a row that does not read).
func BuildPageStream(s *polyloop.LogStream, p Page) (*Trajectory, error) {
	return buildStream(s, &p)
}

func build(log polyloop.RunLog, p *Page) *Trajectory {
	t, _ := buildStream(log.Stream(), p) // a log read: no read fails
	return t
}

// buildStream projects one fold of the log (polyloop.ObserveStream), which
// also gives the totals, the plan and the gates awaited.
func buildStream(s *polyloop.LogStream, p *Page) (*Trajectory, error) {
	b := &Builder{builder{t: &Trajectory{RunID: s.RunID(), Steps: []*Step{}}, page: p}}
	end, err := polyloop.ObserveStream(s, b)
	if err != nil {
		return nil, err
	}
	return b.Trajectory(end), nil
}

// Builder builds the trajectory of one page of a log that another reader
// folds — polyloop.DiffObserve, which folds two logs side by side for a
// comparison: it is that fold's polyloop.LogObserver.
type Builder struct{ builder }

// NewPageBuilder is the Builder of page p of run runID (BuildPage's).
func NewPageBuilder(runID string, p Page) *Builder {
	return &Builder{builder{t: &Trajectory{RunID: runID, Steps: []*Step{}}, page: &p}}
}

// Trajectory is the trajectory once the fold has told the builder every
// record and ended as end says.
func (b *Builder) Trajectory(end polyloop.ObservedLog) *Trajectory {
	t := b.t
	b.done()
	for _, s := range t.Steps { // the reply's order: actions settled at their gate come in last
		slices.SortStableFunc(s.Actions, func(x, y *Action) int { return cmp.Compare(x.Index, y.Index) })
	}
	t.Records, t.UpdatedAt, t.Totals = end.Records, end.LastAt, end.Totals
	if t.Finished == nil && end.Records > 0 {
		switch {
		case end.Break != nil: // the plan says what breaks the log
			t.PlanError = end.Break.Error()
		default:
			t.Plan = end.Plan
			if s := end.Awaiting; len(s.Approvals)+len(s.Deliveries) > 0 {
				t.Awaiting = s
			}
		}
	}
	return t
}

// builder projects the fold's description of each record (it is a
// polyloop.LogObserver) onto the trajectory.
type builder struct {
	t *Trajectory
	// page, when set, is the page whose steps are kept (BuildPage); for
	// page 0, the first page is kept in t.Steps and the last one so far in
	// tail, from step index tailFrom, until the end says which is shown.
	page     *Page
	tail     []*Step
	tailFrom int
}

// step is the trajectory's step of a record, opened at its first record.
func (b *builder) step(f polyloop.Fact) *Step {
	t := b.t
	if t.last == nil || t.last.Step != f.Step {
		t.last = &Step{Step: f.Step, ModelCalls: []*Call{}, FirstSeq: f.Seq, Copied: f.Copied}
		b.keep(t.last, t.StepCount)
		t.StepCount++
	}
	t.last.LastSeq = f.Seq
	return t.last
}

// keep keeps step s, the run's step index i (from 0), if its page is
// shown.
func (b *builder) keep(s *Step, i int) {
	t, p := b.t, b.page
	switch {
	case p == nil:
		t.Steps = append(t.Steps, s)
	case p.Number > 0:
		if from := (p.Number - 1) * p.Per; i >= from && i-from < p.Per {
			t.Steps = append(t.Steps, s)
		}
	default: // the first page, and the last page so far
		if i < p.Per {
			t.Steps = append(t.Steps, s)
		}
		if i%p.Per == 0 {
			clear(b.tail)
			b.tail, b.tailFrom = b.tail[:0], i
		}
		b.tail = append(b.tail, s)
	}
}

// done settles which steps a page 0 shows: the first page of a finished
// run, the last of an unfinished one.
func (b *builder) done() {
	t, p := b.t, b.page
	switch {
	case p == nil:
	case p.Number > 0:
		t.FirstIndex = min((p.Number-1)*p.Per, t.StepCount)
	case t.Finished == nil:
		t.Steps, t.FirstIndex = b.tail, b.tailFrom
	}
}

// Record notes the record in the invocation that wrote it.
func (b *builder) Record(f polyloop.Fact, _ polyloop.Record) {
	t := b.t
	if f.Invocation != "" || len(t.Invocations) == 0 {
		inv := Invocation{FirstSeq: f.Seq, From: f.At, Evidence: f.Invocation, FirstStep: f.Step}
		if n := len(t.Invocations); n > 0 {
			inv.Gap = f.At.Sub(t.Invocations[n-1].To)
		}
		t.Invocations = append(t.Invocations, inv)
	}
	cur := &t.Invocations[len(t.Invocations)-1]
	cur.LastSeq, cur.To, cur.LastStep = f.Seq, f.At, f.Step
}

func (b *builder) RunStarted(f polyloop.Fact, rs *polyloop.RunStarted) {
	t := b.t
	t.Agent, t.SnapshotHash, t.Task, t.System, t.Parent = rs.Snapshot.Agent, rs.SnapshotHash, rs.Snapshot.Task.Input, rs.Snapshot.System, rs.Parent
	t.StartedAt, t.Snapshot = f.At, rs.Snapshot
	t.ForkedFrom, t.ReplayOf = rs.ForkedFrom, rs.ReplayOf
	if t.RunID == "" {
		t.RunID = rs.RunID
	}
}

func (b *builder) ModelCall(f polyloop.Fact, in *polyloop.ModelCallIntent) {
	s := b.step(f)
	s.ModelCalls = append(s.ModelCalls, &Call{CallID: in.CallID, Attempt: in.Attempt, Seq: f.Seq, At: f.At, Unknown: true, View: in.View})
}

func (b *builder) ModelResult(f polyloop.Fact, res *polyloop.ModelCallResult) {
	for _, c := range b.step(f).ModelCalls {
		if c.CallID == res.CallID {
			c.Reply, c.Failure, c.Usage, c.Unknown = res.Reply, res.Failure, res.Usage, false
		}
	}
}

func (b *builder) ActionStarted(f polyloop.Fact, in *polyloop.ActionIntent, replaced *polyloop.ActionIntent) {
	s := b.step(f)
	for _, a := range s.Actions {
		if replaced != nil && a.ActionID == replaced.ActionID && a.Attempt == replaced.Attempt {
			a.Replayed = true
		}
	}
	s.Actions = append(s.Actions, &Action{ActionID: in.ActionID, Attempt: in.Attempt, Index: in.Index, Of: in.BatchSize(),
		Seq: f.Seq, At: f.At, Action: in.Action, Replay: in.Replay, Unknown: true, Gate: s.gate(in.ActionID), Key: in.IdempotencyKey})
}

// ActionReconciled attaches a reconciler's answer to the attempt it
// answers for.
func (b *builder) ActionReconciled(f polyloop.Fact, rc *polyloop.ActionReconciled) {
	s := b.step(f)
	for _, a := range s.Actions {
		if a.ActionID == rc.ActionID && a.Attempt == rc.Attempt {
			a.Reconciled = rc
		}
	}
}

// ActionSettled attaches a settlement to the attempt it settles, or adds
// the action its gate settled (which has no intent) from the gate's
// request.
func (b *builder) ActionSettled(f polyloop.Fact, sa *polyloop.SettledAction, in *polyloop.ActionIntent, _ *polyloop.GateRequest) {
	s := b.step(f)
	if in != nil {
		for _, a := range s.Actions {
			if a.ActionID == in.ActionID && a.Attempt == in.Attempt {
				a.Settled, a.SettledSeq, a.Unknown, a.Replayed = sa, f.Seq, false, false
			}
		}
		return
	}
	if g := s.gate(sa.ResultID); g != nil {
		s.Actions = append(s.Actions, &Action{ActionID: g.ActionID, Index: g.Index, Of: max(g.Of, 1), At: g.At, Action: g.Action,
			Settled: sa, SettledSeq: f.Seq, Gate: g, AtGate: true})
	}
}

func (b *builder) StepCompleted(f polyloop.Fact, sc *polyloop.StepCompleted) {
	b.step(f).Completed = sc
}

func (b *builder) GateRequested(f polyloop.Fact, kind polyloop.RecordKind, g *polyloop.GateRequest) {
	s := b.step(f)
	s.Gates = append(s.Gates, &Gate{Kind: kind, GateRequest: g, Seq: f.Seq, At: f.At})
}

func (b *builder) ApprovalDecided(f polyloop.Fact, d *polyloop.ApprovalDecided) {
	if g := b.step(f).gate(d.ActionID); g != nil {
		g.Decision, g.AnswerSeq, g.AnsweredAt = d, f.Seq, f.At
	}
}

func (b *builder) DeliveryReceived(f polyloop.Fact, d *polyloop.DeliveryReceived) {
	if g := b.step(f).gate(d.ActionID); g != nil {
		g.Delivery, g.AnswerSeq, g.AnsweredAt = d, f.Seq, f.At
	}
}

func (b *builder) ChildReceived(f polyloop.Fact, c *polyloop.ChildReception) {
	s := b.step(f)
	if c.Maintenance {
		m := s.maintenance()
		m.Records = append(m.Records, MaintenanceRecord{Reception: c})
		return
	}
	s.Receptions = append(s.Receptions, &Reception{ChildReception: c, Seq: f.Seq})
}

func (b *builder) MaintenanceOp(f polyloop.Fact, op *polyloop.MaintenanceOp) {
	m := b.step(f).maintenance()
	m.Records = append(m.Records, MaintenanceRecord{Operation: op})
}

func (b *builder) MaintenanceDone(f polyloop.Fact, _ *polyloop.MaintenanceDone) {
	b.step(f).maintenance().Done = true
}

func (b *builder) ConfigOverridden(f polyloop.Fact, o *polyloop.ConfigOverride, before polyloop.Snapshot) {
	b.t.Overrides = append(b.t.Overrides, &Override{ConfigOverride: o, Seq: f.Seq, At: f.At, Diff: polyloop.DiffSnapshots(before, o.Snapshot)})
}

func (b *builder) LeaseTakenOver(f polyloop.Fact, tk *polyloop.LeaseTakeover) {
	b.t.Takeovers = append(b.t.Takeovers, &Takeover{LeaseTakeover: tk, Seq: f.Seq, At: f.At})
}

func (b *builder) RunFinished(_ polyloop.Fact, fin *polyloop.RunFinished) { b.t.Finished = fin }
