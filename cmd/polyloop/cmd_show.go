package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/costtext"
	traj "github.com/polyloop/polyloop/internal/trajectory"
	"github.com/spf13/cobra"
)

func newShowCmd(a *app) *cobra.Command {
	var asJSON bool
	var full bool
	c := &cobra.Command{
		Use:   "show RUN_ID",
		Short: "Show a run's trajectory: replies, actions, statuses, observations, failures",
		Long: `Show a run's trajectory from its log: each step's model reply, action,
status and observation (synthetic observations and truncated ones are marked),
model failures with their diagnostics, executions of unknown outcome, child runs
and their receptions, and the finish — or, for a run a live process drives
now, "running (pid N on HOST, since T)" (its lease's holder; show takes no
lease) with its open call or action under way, and for another unfinished
run what resume would do. A run of a sweep shows its agent configuration,
task, epoch and attempt, and its scores with their explanations.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.show(cmd.Context(), args[0], asJSON, full)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the trajectory as JSON")
	c.Flags().BoolVar(&full, "full", false, "print texts in full instead of cutting them")
	return c
}

func (a *app) show(ctx context.Context, id string, asJSON, full bool) error {
	st, err := a.openRead(ctx, readOnlyStore)
	if err != nil {
		return err
	}
	defer st.Close()
	t, err := loadTrajectory(ctx, st, id)
	if err != nil {
		return err
	}
	sw, err := sweepOfRun(ctx, st, id)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(a.machineOut(), struct {
			*trajectory
			Sweep *runSweep `json:"sweep,omitempty"`
		}{t, sw})
	}
	limit := 400
	if full {
		limit = -1
	}
	w := &showWriter{w: a.stdout, limit: limit, sourceClient: replayedClient(ctx, st, t)}
	w.trajectory(t)
	if sw != nil {
		sw.write(a.stdout, w.cut)
	}
	return nil
}

// showWriter prints a trajectory as text.
type showWriter struct {
	w     io.Writer
	limit int
	// sourceClient is the model client of a replay's recorded run (""
	// when unknown: that run is gone or unreadable).
	sourceClient string
}

// replayedClient is the name of the model client of the run t replays,
// "" when t is no replay or that run cannot be read (it may be deleted).
func replayedClient(ctx context.Context, st polyloop.Store, t *trajectory) string {
	if t.ReplayOf == nil {
		return ""
	}
	log, err := polyloop.ReadLog(ctx, st, t.ReplayOf.RunID)
	if err != nil || log.Empty() {
		return ""
	}
	snap, _ := log.Snapshot()
	return snap.ModelClient.Name
}

func (s *showWriter) cut(text string) string {
	r := []rune(text)
	if s.limit < 0 || len(r) <= s.limit {
		return text
	}
	return string(r[:s.limit]) + fmt.Sprintf("… [%d more characters; --full shows all]", len(r)-s.limit)
}

// block prints a multi-line text indented under a label.
func (s *showWriter) block(label, text string) {
	lines := strings.Split(strings.TrimRight(s.cut(text), "\n"), "\n")
	fmt.Fprintf(s.w, "      %s %s\n", label, lines[0])
	pad := strings.Repeat(" ", len(label)+7)
	for _, l := range lines[1:] {
		fmt.Fprintf(s.w, "%s%s\n", pad, l)
	}
}

func (s *showWriter) trajectory(t *trajectory) {
	fmt.Fprintf(s.w, "run %s  agent %s  started %s\n", t.RunID, t.Agent, t.StartedAt.Format("2006-01-02 15:04:05Z07:00"))
	fmt.Fprintf(s.w, "snapshot %s  (%d records)\n", t.SnapshotHash, t.Records)
	if t.Parent != nil {
		fmt.Fprintf(s.w, "child of run %s (step %d, call %d)\n", t.Parent.RunID, t.Parent.Step, t.Parent.Index)
	}
	if f := t.ForkedFrom; f != nil {
		fmt.Fprintf(s.w, "forked from run %s at step %d: %d records copied%s\n", f.RunID, f.AtStep, f.Copied, changedFields(f.Fields))
	}
	if f := t.ReplayOf; f != nil {
		fmt.Fprintf(s.w, "replay of run %s: the model answered from its log; %s\n", f.RunID, replayDiffers(s.sourceClient, t.Snapshot.ModelClient.Name, f.Fields))
	}
	fmt.Fprintf(s.w, "task: %s\n", s.cut(t.Task))
	for _, o := range t.Overrides {
		fmt.Fprintf(s.w, "config override: %s → %s, fields %s\n", o.PreviousHash, o.SnapshotHash, strings.Join(o.Fields, ", "))
	}
	for _, k := range t.Takeovers {
		fmt.Fprintf(s.w, "lease taken over (%s): from %s, by %s\n", k.Reason, k.From, k.To)
	}
	for _, st := range t.Steps {
		s.step(st)
	}
	for _, c := range t.Children {
		status := "unfinished"
		if c.Finished {
			status = string(c.StopReason)
		}
		fmt.Fprintf(s.w, "child run %s (agent %s): %s\n", c.RunID, c.Agent, status)
	}
	s.end(t)
}

func (s *showWriter) step(st *stepView) {
	if st.Copied {
		fmt.Fprintf(s.w, "step %d (copied from the source: counted in its totals)\n", st.Step)
	} else {
		fmt.Fprintf(s.w, "step %d\n", st.Step)
	}
	for _, c := range st.ModelCalls {
		s.call(c)
	}
	for _, g := range st.Gates {
		s.gate(g)
	}
	for _, ac := range st.Actions {
		if ac.AtGate {
			fmt.Fprintf(s.w, "  action %s (settled at its gate, never run here): %s\n", ac.ActionID, describeAction(&ac.Action, 200))
		} else {
			fmt.Fprintf(s.w, "  action %s (attempt %d, %s): %s\n", ac.ActionID, ac.Attempt, ac.Replay, describeAction(&ac.Action, 200))
		}
		if ac.Action.IsCode() && strings.Contains(ac.Action.Code, "\n") {
			s.block("code:", ac.Action.Code)
		}
		switch {
		case ac.InFlight:
			fmt.Fprintf(s.w, "      under way: no outcome recorded yet\n")
		case ac.Unknown && ac.Replayed:
			fmt.Fprintf(s.w, "      outcome UNKNOWN: intent without an outcome (replayed below)\n")
		case ac.Unknown:
			fmt.Fprintf(s.w, "      outcome UNKNOWN: intent without an outcome\n")
		case ac.Settled != nil: // under its action, in the reply's order, whichever record settled it
			s.outcome(ac.Settled, auditLabel(ac))
		}
		if rc := ac.Reconciled; rc != nil {
			fmt.Fprintf(s.w, "      reconciled on resume (key %s): the world said %s", rc.Key, rc.Verdict)
			if rc.Said != "" {
				fmt.Fprintf(s.w, " (%s)", s.cut(rc.Said))
			}
			fmt.Fprintf(s.w, " → %s\n", rc.Resolution)
		}
	}
	for _, r := range st.Receptions {
		s.receptions("  ", []*polyloop.ChildReception{r.ChildReception})
	}
	if st.Completed != nil {
		s.completed(st)
	}
	if m := st.Maintenance; m != nil {
		s.maintenance(m)
	}
}

func (s *showWriter) receptions(indent string, rs []*polyloop.ChildReception) {
	for _, r := range rs {
		fmt.Fprintf(s.w, "%schild %s (%s): reception %s", indent, r.ChildRunID, r.StopReason, r.Reception)
		if len(r.Value) > 0 {
			fmt.Fprintf(s.w, ", value %s", s.cut(string(r.Value)))
		}
		fmt.Fprintln(s.w)
		if r.Failure != nil {
			s.block("failure:", r.Failure.String())
		}
	}
}

// maintenance shows what a step's maintenance recorded.
func (s *showWriter) maintenance(m *maintenanceView) {
	state := "done"
	if !m.Done {
		state = "NOT DONE"
	}
	fmt.Fprintf(s.w, "  maintenance (%s)\n", state)
	for _, r := range m.Records {
		op := r.Operation
		if op == nil {
			s.receptions("    ", []*polyloop.ChildReception{r.Reception})
			continue
		}
		fmt.Fprintf(s.w, "    %s %s", op.Name, op.Outcome)
		if op.WriteID != "" {
			fmt.Fprintf(s.w, " (write %s)", op.WriteID)
		}
		if len(op.Value) > 0 {
			fmt.Fprintf(s.w, ": %s", s.cut(string(op.Value)))
		}
		fmt.Fprintln(s.w)
		if op.Failure != nil {
			s.block("failure:", op.Failure.String())
		}
	}
}

func (s *showWriter) call(c *callView) {
	fmt.Fprintf(s.w, "  model call %s (attempt %d)", c.CallID, c.Attempt)
	if c.View != nil {
		fmt.Fprintf(s.w, ", showing view %s version %d", c.View.Name, c.View.Version)
	}
	switch {
	case c.InFlight:
		fmt.Fprintf(s.w, ": under way (no result yet)\n")
	case c.Unknown:
		fmt.Fprintf(s.w, ": outcome UNKNOWN (intent without a result)\n")
	case c.Failure != nil:
		fmt.Fprintf(s.w, ": FAILED")
		if c.Usage != nil { // a reply refused, or a request sent and unanswered: billed
			fmt.Fprintf(s.w, ", %s (%s)", usageText(*c.Usage), billedText(*c.Usage))
		}
		fmt.Fprintln(s.w)
		s.block("diagnostic:", c.Failure.String())
	default:
		fmt.Fprintf(s.w, ": %s, %s\n", c.Reply.Model, usageText(c.Reply.Usage))
		if c.Reply.Text != "" {
			s.block("reply:", c.Reply.Text)
		}
		for _, tc := range c.Reply.ToolCalls {
			s.block("tool call:", fmt.Sprintf("%s %s %s", tc.ID, tc.Name, argsText(tc.Args)))
		}
	}
}

func (s *showWriter) completed(st *stepView) {
	c := st.Completed
	switch c.Decision {
	case polyloop.DecisionInvalid:
		s.block("invalid, feedback:", c.Feedback)
	case polyloop.DecisionFinal:
		s.block("final answer:", c.Answer)
	case polyloop.DecisionAct:
		for _, ac := range st.Actions {
			if ac.Settled == &c.SettledAction {
				return // printed under its action
			}
		}
		s.outcome(&c.SettledAction, "executor said:")
	}
}

// auditLabel labels the audit text of an action's settlement: the
// executor's own text, or the note of a person who denied it at its gate.
func auditLabel(ac *actionView) string {
	if ac.AtGate && ac.Gate != nil && ac.Gate.Decision != nil {
		return "note (not shown to the model):"
	}
	return "executor said:"
}

// gate prints an action's gate: what it waits for, or its answer. The
// settlement of an action settled there (denied, delivered) is its action's.
func (s *showWriter) gate(g *gateView) {
	what := "approval"
	if g.Kind == polyloop.KindDeliveryRequested {
		what = "delivery"
	}
	fmt.Fprintf(s.w, "  %s of %s %s: ", what, g.ActionID, describeAction(&g.Action, 200))
	switch {
	case g.Decision != nil && g.Decision.Timeout:
		fmt.Fprintf(s.w, "denied: the deadline passed (resumed at %s)\n", g.Decision.Clock.UTC().Format(time.RFC3339))
	case g.Decision != nil:
		verdict := "denied"
		if g.Decision.Allow {
			verdict = "allowed"
		}
		fmt.Fprintf(s.w, "%s by %s%s\n", verdict, g.Decision.By, noteText(g.Decision.Note))
	case g.Delivery != nil && g.Delivery.Timeout:
		fmt.Fprintf(s.w, "not delivered: the deadline passed (resumed at %s)\n", g.Delivery.Clock.UTC().Format(time.RFC3339))
	case g.Delivery != nil:
		fmt.Fprintf(s.w, "delivered by %s (%s)\n", g.Delivery.By, g.Delivery.Outcome.Status)
	default:
		fmt.Fprintf(s.w, "waiting%s\n", deadlineText(g.Deadline))
	}
}

// changedFields says how a fork's or replay's agent differs from its
// source's.
func changedFields(fields []string) string {
	if len(fields) == 0 {
		return "; the agent unchanged"
	}
	return "; the agent changed in " + strings.Join(fields, ", ")
}

// replayDiffers says how a replay's configuration differs from its
// recorded run's as replay says it (configDiff): the model client, always
// replaced, said once by its names, then the agent's own changes.
func replayDiffers(recorded, replay string, fields []string) string {
	client := "the model client (replaced by " + replay + ")"
	if recorded != "" {
		client = "the model client (" + recorded + ", replaced by " + replay + ")"
	}
	return "configuration differs in: " + strings.Join(append([]string{client}, fields...), ", ")
}

func noteText(note string) string {
	if note == "" {
		return ""
	}
	return " — " + note
}

func deadlineText(d *time.Time) string {
	if d == nil {
		return ""
	}
	return " (deadline " + d.UTC().Format(time.RFC3339) + ")"
}

// outcome prints an action's settled outcome; audit labels its audit text
// (the executor's own text, or the note of a denial).
func (s *showWriter) outcome(c *polyloop.SettledAction, audit string) {
	var marks []string
	if c.Synthetic {
		marks = append(marks, "synthetic")
	}
	if c.TruncatedChars > 0 {
		marks = append(marks, fmt.Sprintf("truncated: %d characters dropped", c.TruncatedChars))
	}
	if c.Outcome.Done {
		marks = append(marks, "done")
	}
	label := string(c.Outcome.Status)
	if len(marks) > 0 {
		label += " [" + strings.Join(marks, ", ") + "]"
	}
	if strings.Contains(c.ResultID, ".") { // an action of a larger batch: say which
		label += " (" + c.ResultID + ")"
	}
	fmt.Fprintf(s.w, "      → %s\n", label)
	s.block("observation:", c.Observation)
	if c.Audit != "" {
		s.block(audit, c.Audit)
	}
}

func (s *showWriter) end(t *trajectory) {
	tt := t.Totals
	cost := costLong.cost(tt.CostUSD, tt.CostUnknown)
	switch {
	case t.Finished != nil:
		fmt.Fprintf(s.w, "finished: %s", t.Finished.StopReason)
		if t.Finished.FinalAnswer != "" {
			fmt.Fprintf(s.w, " — %s", s.cut(t.Finished.FinalAnswer))
		}
		fmt.Fprintln(s.w)
	case t.Running != nil:
		fmt.Fprintf(s.w, "%s: the log so far (no resume: that process drives the run)\n", runningText(*t.Running))
	case t.Awaiting != nil:
		printGates(s.w, t.RunID, t.Awaiting)
		fmt.Fprintf(s.w, "SUSPENDED: waiting for the answers above (polyloop approve / deliver), then resume\n")
	case t.Plan != nil:
		fmt.Fprintf(s.w, "UNFINISHED; resume would: %s\n", planRow(*t.Plan))
	default:
		fmt.Fprintf(s.w, "UNFINISHED and not resumable: %s\n", t.PlanError)
	}
	fmt.Fprintf(s.w, "totals: %s, %d model calls, %d actions, %s, %s", traj.StepsPhrase(tt), tt.ModelCalls, tt.Actions, tokens(tt.Tokens(), tt.TokensUnknown), cost)
	if tt.UnknownModelCalls+tt.UnknownActions > 0 {
		fmt.Fprintf(s.w, ", unknown outcome: %d model calls, %d actions", tt.UnknownModelCalls, tt.UnknownActions)
	}
	if tt.CopiedSteps > 0 {
		fmt.Fprintf(s.w, " (the copied steps' calls and actions count in the source's totals)")
	}
	fmt.Fprintln(s.w)
}

// usageText is one call's usage: "10 in / 5 out tokens, $0.000120", "≥ 10
// in / 5 out tokens, cost unknown" when the tokens are a lower bound, or
// "usage unknown" for a call that reported none (the totals count both as
// unknown).
func usageText(u polyloop.Usage) string {
	if u.InputTokens == 0 && u.OutputTokens == 0 && u.CachedTokens == 0 {
		return "usage unknown"
	}
	cost := "cost unknown"
	if u.CostUSD != nil {
		cost = costtext.USD(*u.CostUSD, 6)
	}
	atLeast := ""
	if u.TokensUnknown {
		atLeast = "≥ "
	}
	return fmt.Sprintf("%s%d in / %d out tokens, %s", atLeast, u.InputTokens, u.OutputTokens, cost)
}

// billedText says what the usage of a failed call is: a reply received
// and refused, or a request sent that may have been billed.
func billedText(u polyloop.Usage) string {
	if u.TokensUnknown {
		return "the request was sent: it may have been billed"
	}
	return "the reply received"
}
