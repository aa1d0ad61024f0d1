package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/polyloop/polyloop"
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
and their receptions, and the finish — or, for an unfinished run, what resume
would do.`,
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
	st, err := a.openRead(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	t, err := loadTrajectory(ctx, st, id)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(a.stdout, t)
	}
	limit := 400
	if full {
		limit = -1
	}
	(&showWriter{w: a.stdout, limit: limit}).trajectory(t)
	return nil
}

// loadTrajectory reads a run's log and its children.
func loadTrajectory(ctx context.Context, st store, id string) (*trajectory, error) {
	log, err := st.ReadLog(ctx, id)
	if err != nil {
		return nil, err
	}
	if log.Empty() {
		return nil, notFound(st, id)
	}
	log.RunID = id
	t := buildTrajectory(log)
	if t.Children, err = st.ListRuns(ctx, polyloop.RunFilter{ParentRunID: id}); err != nil {
		return nil, err
	}
	return t, nil
}

// showWriter prints a trajectory as text.
type showWriter struct {
	w     io.Writer
	limit int
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
	fmt.Fprintf(s.w, "step %d\n", st.Step)
	for _, c := range st.ModelCalls {
		s.call(c)
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
		case ac.Unknown && ac.Replayed:
			fmt.Fprintf(s.w, "      outcome UNKNOWN: intent without a step record (replayed below)\n")
		case ac.Unknown:
			fmt.Fprintf(s.w, "      outcome UNKNOWN: intent without a step record\n")
		case st.Completed == nil || ac.Settled != &st.Completed.SettledAction:
			s.outcome(ac.Settled) // settled by an action_result
		}
	}
	for _, r := range st.Receptions {
		fmt.Fprintf(s.w, "  child %s (%s): reception %s", r.ChildRunID, r.StopReason, r.Reception)
		if len(r.Value) > 0 {
			fmt.Fprintf(s.w, ", value %s", s.cut(string(r.Value)))
		}
		fmt.Fprintln(s.w)
		if r.Failure != nil {
			s.block("failure:", r.Failure.String())
		}
	}
	if st.Completed != nil {
		s.completed(st.Completed)
	}
}

func (s *showWriter) call(c *callView) {
	fmt.Fprintf(s.w, "  model call %s (attempt %d)", c.CallID, c.Attempt)
	switch {
	case c.Unknown:
		fmt.Fprintf(s.w, ": outcome UNKNOWN (intent without a result)\n")
	case c.Failure != nil:
		fmt.Fprintf(s.w, ": FAILED\n")
		s.block("diagnostic:", c.Failure.String())
	default:
		u := c.Reply.Usage
		cost := "cost unknown"
		if u.CostUSD != nil {
			cost = fmt.Sprintf("$%.6f", *u.CostUSD)
		}
		fmt.Fprintf(s.w, ": %s, %d in / %d out tokens, %s\n", c.Reply.Model, u.InputTokens, u.OutputTokens, cost)
		if c.Reply.Text != "" {
			s.block("reply:", c.Reply.Text)
		}
		for _, tc := range c.Reply.ToolCalls {
			s.block("tool call:", fmt.Sprintf("%s %s %s", tc.ID, tc.Name, argsText(tc.Args)))
		}
	}
}

func (s *showWriter) completed(c *polyloop.StepCompleted) {
	switch c.Decision {
	case polyloop.DecisionInvalid:
		s.block("invalid, feedback:", c.Feedback)
	case polyloop.DecisionFinal:
		s.block("final answer:", c.Answer)
	case polyloop.DecisionAct:
		s.outcome(&c.SettledAction)
	}
}

// outcome prints an action's settled outcome.
func (s *showWriter) outcome(c *polyloop.SettledAction) {
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
		s.block("executor said:", c.Audit)
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
	case t.Awaiting != nil:
		printGates(s.w, t.RunID, t.Awaiting)
		fmt.Fprintf(s.w, "SUSPENDED: waiting for the answers above (polyloop approve / deliver), then resume\n")
	case t.Plan != nil:
		fmt.Fprintf(s.w, "UNFINISHED; resume would: %s\n", planRow(*t.Plan))
	default:
		fmt.Fprintf(s.w, "UNFINISHED and not resumable: %s\n", t.PlanError)
	}
	fmt.Fprintf(s.w, "totals: %d steps, %d model calls, %d actions, %d tokens, %s", tt.Steps, tt.ModelCalls, tt.Actions, tt.Tokens(), cost)
	if tt.UnknownModelCalls+tt.UnknownActions > 0 {
		fmt.Fprintf(s.w, ", unknown outcome: %d model calls, %d actions", tt.UnknownModelCalls, tt.UnknownActions)
	}
	fmt.Fprintln(s.w)
}
