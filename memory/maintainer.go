package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/polyloop/polyloop"
)

// Policy says how a maintenance receives a failure business may receive.
// The zero value, Fail, receives nothing: the failure propagates and the run
// stops with it (the kernel picks no default of its own).
type Policy string

// The policies.
const (
	// Fail: the failure propagates out of the run.
	Fail Policy = ""
	// Skip: the failure is received and the operation skipped; the rest of
	// the maintenance goes on where it has something to do.
	Skip Policy = "skip"
	// Regenerate (OnConflict only): a new proposal is made, from a new
	// basis, by a new child, with a new write id — never the old proposal
	// on a new basis; after MaxProposals attempts, as Skip.
	Regenerate Policy = "regenerate"
)

// DefaultMaxEntries bounds what the proposer is shown.
const DefaultMaxEntries = 100

// MaintainerOptions configure a Maintainer.
type MaintainerOptions struct {
	// Memory is written by the maintenance (required).
	Memory *Memory
	// View is adjusted after the memory (nil: none).
	View *View
	// Proposer is the child agent that proposes (its Key is set per
	// attempt). Its final answer is the proposal (DefaultProposerSystem
	// describes the form).
	Proposer polyloop.Child
	// OnProposalFailure receives a proposal that failed: a child that did
	// not complete (a model failure, its limits) or an answer that is not
	// a proposal. Skip or Fail.
	OnProposalFailure Policy
	// OnConflict receives a write the Memory's pre-commit check refused.
	// Skip, Fail or Regenerate.
	OnConflict Policy
	// MaxProposals bounds the attempts of Regenerate (default 2).
	MaxProposals int
	// OnViewRejected receives an adjustment the View's pre-commit check
	// refused. Skip or Fail.
	OnViewRejected Policy
	// MaxEntries bounds the entries the proposer is shown, taken in
	// namespace and key order (default DefaultMaxEntries).
	MaxEntries int
}

// Maintainer maintains an agent's memory after each step (a
// polyloop.Maintainer), as the third seed lays out: a proposal (a child),
// then Memory.Apply, then the View's adjustment. Each commits only its own
// effect; nothing established is rolled back; each fact is recorded in the
// run's log, so a resume never repeats a write or a reception that
// succeeded. Per step and attempt n, the log holds the operations
// "context.n" (what the proposer is shown, and so the basis), the child
// "proposal.n", "memory.n" (the commit, or the conflict received) and
// "view.n" (the version made, or the rejection received); the writes' ids
// are "<run>/<step>~memory.n" and "<run>/<step>~view.n".
type Maintainer struct {
	opts MaintainerOptions
}

var (
	_ polyloop.Maintainer = (*Maintainer)(nil)
	_ polyloop.Describer  = (*Maintainer)(nil)
	_ polyloop.Reloader   = (*Maintainer)(nil)
)

// NewMaintainer checks the options.
func NewMaintainer(opts MaintainerOptions) (*Maintainer, error) {
	var errs []error
	if opts.Memory == nil {
		errs = append(errs, errors.New("no Memory"))
	}
	if opts.Proposer.Runner == nil {
		errs = append(errs, errors.New("no Proposer.Runner"))
	}
	check := func(name string, p Policy, allowed ...Policy) {
		for _, a := range append(allowed, Fail) {
			if p == a {
				return
			}
		}
		errs = append(errs, fmt.Errorf("%s: unknown policy %q", name, p))
	}
	check("OnProposalFailure", opts.OnProposalFailure, Skip)
	check("OnConflict", opts.OnConflict, Skip, Regenerate)
	check("OnViewRejected", opts.OnViewRejected, Skip)
	if opts.MaxProposals <= 0 {
		opts.MaxProposals = 2
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultMaxEntries
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("memory: NewMaintainer: %w", errors.Join(errs...))
	}
	return &Maintainer{opts: opts}, nil
}

// Describe implements polyloop.Describer: the policies, the bounds, the
// namespaces, the view and the proposer agent, in the snapshot.
func (mt *Maintainer) Describe() polyloop.Component {
	o := mt.opts
	cfg := map[string]any{"namespaces": o.Memory.Namespaces(), "proposer": proposerIdentity(o.Proposer),
		"on_proposal_failure": policyName(o.OnProposalFailure), "on_conflict": policyName(o.OnConflict),
		"on_view_rejected": policyName(o.OnViewRejected), "max_entries": o.MaxEntries}
	if o.OnConflict == Regenerate {
		cfg["max_proposals"] = o.MaxProposals
	}
	if o.View != nil {
		cfg["view"] = o.View.Name()
	}
	raw, _ := json.Marshal(cfg)
	return polyloop.Component{Name: "memory.Maintainer", Config: raw}
}

// proposerIdentity is what of the proposer changes its proposals: its
// agent's name, prompt (by digest), limits and model parameters, and its
// seams' identities.
func proposerIdentity(c polyloop.Child) map[string]any {
	a := c.Agent
	sum := sha256.Sum256([]byte(a.System))
	id := map[string]any{"agent": a.Name, "system_sha256": hex.EncodeToString(sum[:]), "limits": a.Limits, "model": a.Model}
	if r := c.Runner; r != nil {
		for name, seam := range map[string]any{"model_client": r.Model, "parser": r.Parser} {
			if seam != nil {
				id[name] = polyloop.Describe(seam)
			}
		}
	}
	return id
}

func policyName(p Policy) string {
	if p == Fail {
		return "fail"
	}
	return string(p)
}

// Reload implements polyloop.Reloader: the Memory, then the View.
func (mt *Maintainer) Reload(ctx context.Context) error {
	if err := mt.opts.Memory.Reload(ctx); err != nil {
		return err
	}
	if mt.opts.View != nil {
		return mt.opts.View.Reload(ctx)
	}
	return nil
}

// Maintain implements polyloop.Maintainer.
func (mt *Maintainer) Maintain(ctx context.Context, step polyloop.MaintainedStep) error {
	for attempt := 1; ; attempt++ {
		again, err := mt.attempt(ctx, step, strconv.Itoa(attempt), attempt < mt.opts.MaxProposals)
		if err != nil || !again {
			return err
		}
	}
}

// attempt runs one attempt of the chain; again reports a conflict the
// policy regenerates.
func (mt *Maintainer) attempt(ctx context.Context, step polyloop.MaintainedStep, n string, mayRegenerate bool) (again bool, err error) {
	in, err := polyloop.Perform(ctx, polyloop.Operation[proposalInput]{Name: "context." + n,
		Do: func(ctx context.Context) (proposalInput, error) { return mt.input(ctx) }})
	if err != nil {
		return false, err
	}
	p, err := mt.propose(ctx, step, n, in)
	if err != nil || p.Skipped {
		return false, err
	}
	res, err := mt.apply(ctx, step, n, in, p)
	if err != nil {
		return false, err
	}
	if res.Conflict && mt.opts.OnConflict == Regenerate && mayRegenerate {
		return true, nil
	}
	if mt.opts.View == nil {
		return false, nil
	}
	return false, mt.adjust(ctx, step, n, in, p, res)
}

// input is what the proposer is shown: the live entries and the view.
func (mt *Maintainer) input(ctx context.Context) (proposalInput, error) {
	var in proposalInput
	for _, ns := range mt.opts.Memory.Namespaces() {
		es, err := mt.opts.Memory.List(ctx, ns)
		if err != nil {
			return in, err
		}
		in.Entries = append(in.Entries, es...)
	}
	if len(in.Entries) > mt.opts.MaxEntries {
		in.Entries = in.Entries[:mt.opts.MaxEntries]
	}
	if mt.opts.View != nil {
		cur, err := mt.opts.View.Current(ctx)
		if err != nil {
			return in, err
		}
		in.View = cur.Version
		for _, m := range cur.Members {
			in.Members = append(in.Members, m.ID())
		}
	}
	return in, nil
}

// propose invokes the proposer child; its failure — the child not
// completing, or an answer that is not a proposal — is received as the
// policy says.
func (mt *Maintainer) propose(ctx context.Context, step polyloop.MaintainedStep, n string, in proposalInput) (Proposal, error) {
	child := mt.opts.Proposer
	child.Key = "proposal." + n
	recv := polyloop.Receive[Proposal]{Succeeded: func(r polyloop.RunResult) (Proposal, error) {
		if receivedHook != nil {
			receivedHook(r.RunID)
		}
		p, err := parseProposal(r.FinalAnswer, mt.opts.Memory.Namespaces(), in)
		if err != nil && mt.opts.OnProposalFailure == Skip {
			return Proposal{Skipped: true, Reason: err.Error()}, nil
		}
		return p, err
	}}
	if mt.opts.OnProposalFailure == Skip {
		recv.Failed = func(f *polyloop.ChildFailure) (Proposal, error) {
			return Proposal{Skipped: true, Reason: f.Error()}, nil
		}
	}
	return polyloop.InvokeChild(ctx, child, polyloop.Task{Input: proposalTask(step, in)}, recv)
}

// receivedHook, when set (tests), is told of each run of the proposal's
// Succeeded handler.
var receivedHook func(childRunID string)

// memoryOutcome is the recorded outcome of the memory operation.
type memoryOutcome struct {
	Commit *Commit `json:"commit,omitempty"`
	// Conflict: the pre-commit check refused the write, and the policy
	// received it.
	Conflict bool `json:"conflict,omitempty"`
}

func (mt *Maintainer) apply(ctx context.Context, step polyloop.MaintainedStep, n string, in proposalInput, p Proposal) (memoryOutcome, error) {
	w := Write{ID: fmt.Sprintf("%s/%d~memory.%s", step.RunID, step.Step, n), Basis: in.basis(), Ops: p.Ops,
		Provenance: Provenance{RunID: step.RunID, Step: step.Step, CallID: "maintenance"}}
	op := polyloop.Operation[memoryOutcome]{Name: "memory." + n, WriteID: w.ID,
		Do: func(ctx context.Context) (memoryOutcome, error) {
			c, err := mt.opts.Memory.Apply(ctx, w)
			return memoryOutcome{Commit: &c}, err
		}}
	if mt.opts.OnConflict != Fail {
		op.Failed = func(err error) (memoryOutcome, error) {
			if !IsReceivable(err) {
				return memoryOutcome{}, err
			}
			return memoryOutcome{Conflict: true}, nil
		}
	}
	return polyloop.Perform(ctx, op)
}

// viewOutcome is the recorded outcome of the view operation.
type viewOutcome struct {
	Version ViewRef `json:"version"`
	// Rejected: the pre-commit check refused the adjustment, and the
	// policy received it.
	Rejected bool `json:"rejected,omitempty"`
}

func (mt *Maintainer) adjust(ctx context.Context, step polyloop.MaintainedStep, n string, in proposalInput, p Proposal, res memoryOutcome) error {
	a := viewAdjustment(in, p, res)
	a.ID = fmt.Sprintf("%s/%d~view.%s", step.RunID, step.Step, n)
	a.Provenance = Provenance{RunID: step.RunID, Step: step.Step, CallID: "maintenance"}
	op := polyloop.Operation[viewOutcome]{Name: "view." + n, WriteID: a.ID,
		Do: func(ctx context.Context) (viewOutcome, error) {
			vv, err := mt.opts.View.Adjust(ctx, a)
			return viewOutcome{Version: vv.Ref()}, err
		}}
	if mt.opts.OnViewRejected == Skip {
		op.Failed = func(err error) (viewOutcome, error) {
			if !IsReceivable(err) {
				return viewOutcome{}, err
			}
			return viewOutcome{Rejected: true}, nil
		}
	}
	_, err := polyloop.Perform(ctx, op)
	return err
}

// viewAdjustment is the view change of a proposal, made from the view
// version the proposer was shown: each included entry at the version the
// memory operation wrote, else at the version the proposer was shown (0,
// which the View refuses, for an entry neither wrote nor shown). Without a
// view part, the view follows the commit: what it put is shown, the members
// it deleted are dropped.
func viewAdjustment(in proposalInput, p Proposal, res memoryOutcome) Adjustment {
	written := map[EntryID]EntryVersion{}
	if res.Commit != nil {
		for _, v := range res.Commit.Entries {
			written[v.ID()] = v
		}
	}
	change := p.View
	if change == nil {
		change = &ViewChange{}
		for _, v := range written {
			if !v.Deleted {
				change.Include = append(change.Include, v.ID())
			} else if containsID(in.Members, v.ID()) {
				change.Exclude = append(change.Exclude, v.ID())
			}
		}
		sortIDs(change.Include)
		sortIDs(change.Exclude)
	}
	a := Adjustment{Basis: in.View, Exclude: change.Exclude}
	shown := in.basis()
	for _, id := range change.Include {
		version := shown.Version(id)
		if v, ok := written[id]; ok {
			version = v.Version
		}
		a.Include = append(a.Include, Expect{Namespace: id.Namespace, Key: id.Key, Version: version})
	}
	return a
}
