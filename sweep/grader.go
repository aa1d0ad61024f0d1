package sweep

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/polyloop/polyloop"
)

// GraderOptions configure a model-graded scorer.
type GraderOptions struct {
	// Grader is the agent that grades (required).
	Grader *Agent
	// Template is the grading task: {input}, {target} and {answer} are
	// replaced by the task's input, its targets (one per line) and the
	// run's answer. Default DefaultGraderTemplate.
	Template string
	// Attempts bounds the grading runs of one answer: a grading run that
	// does not complete with a grade is followed by another (default 3).
	Attempts int
}

// DefaultGraderTemplate asks for a grade C (correct), P (partly) or I
// (incorrect) on a last line.
const DefaultGraderTemplate = `You are grading an answer to a task against a reference answer.

[Task]
{input}

[Reference answer]
{target}

[Answer]
{answer}

Does the answer agree with the reference answer? Reason briefly, then end with a line "GRADE: C" if it is correct, "GRADE: P" if it is partly correct, or "GRADE: I" if it is incorrect.`

// gradePattern finds a grade: C, P, I, or a number from 0 to 1.
var gradePattern = lazyRegexp(`(?i)grade:\s*\**\s*([CPI]\b|[01](?:\.\d+)?|\.\d+)`)

// parseGrade reads the last grade in a grader's answer.
func parseGrade(answer string) (float64, bool) {
	all := gradePattern().FindAllStringSubmatch(answer, -1)
	if len(all) == 0 {
		return 0, false
	}
	switch g := strings.ToUpper(all[len(all)-1][1]); g {
	case "C":
		return 1, true
	case "P":
		return 0.5, true
	case "I":
		return 0, true
	default:
		v, err := strconv.ParseFloat(g, 64)
		return v, err == nil && v >= 0 && v <= 1
	}
}

type graderScorer struct {
	name   string
	grader *Agent
	opts   GraderOptions
}

// ModelGraded scores with a grading run: the grader agent is given the
// template filled with the task and the answer, and its final answer's
// last "GRADE: C|P|I" (or a number from 0 to 1) is the score. The grading
// run is a run of its own in the sweep's store, recorded like any other
// (no model call goes unlogged); its id is the graded run's id followed by
// ":grade:", the scorer's name, the grader's snapshot key and the attempt.
// A grading run that exists is reused: scoring again with the same grader
// runs nothing. A run without an answer scores 0 without a grading run.
func ModelGraded(name string, opts GraderOptions) Scorer {
	if opts.Template == "" {
		opts.Template = DefaultGraderTemplate
	}
	if opts.Attempts <= 0 {
		opts.Attempts = 3
	}
	return &graderScorer{name: name, grader: opts.Grader, opts: opts}
}

func (g *graderScorer) Name() string { return g.name }

// Version digests the grader's snapshot hash and the template (known once
// New has hashed the grader).
func (g *graderScorer) Version() string {
	return versionOf("model", 1, map[string]string{"grader": g.grader.hash, "template": g.opts.Template})
}

func (g *graderScorer) Description() string {
	return fmt.Sprintf("graded by the agent %s (C 1, P 0.5, I 0)", g.grader.Agent.Name)
}

// gradingRunID is the id of a grading run of runID.
func (g *graderScorer) gradingRunID(runID string, attempt int) string {
	return runID + ":grade:" + g.name + ":" + agentKey(g.grader.hash) + ":" + strconv.Itoa(attempt)
}

// Score implements Scorer.
func (g *graderScorer) Score(ctx context.Context, in ScoreInput) (ScoreResult, error) {
	if r, ok := noAnswer(in); ok {
		return r, nil
	}
	if in.store == nil || g.grader.model == nil {
		return ScoreResult{}, fmt.Errorf("scorer %s: not part of a sweep (New prepares its grader)", g.name)
	}
	task := polyloop.Task{Input: strings.NewReplacer("{input}", in.Task.Input, "{target}", strings.Join(in.Task.Target, "\n"),
		"{answer}", in.Answer).Replace(g.opts.Template)}
	var last error
	for attempt := 1; attempt <= g.opts.Attempts; attempt++ {
		id := g.gradingRunID(in.RunID, attempt)
		res, err := runOrResume(ctx, g.grader.runner(in.store), id, g.grader.Agent, task)
		if err != nil {
			return ScoreResult{}, fmt.Errorf("scorer %s: grading run %s: %w", g.name, id, err)
		}
		if res.Suspended != nil {
			return ScoreResult{}, fmt.Errorf("scorer %s: grading run %s waits at a gate", g.name, id)
		}
		v, ok := parseGrade(res.FinalAnswer)
		if res.StopReason == polyloop.StopCompleted && ok {
			return ScoreResult{Value: v, Explanation: lastLines(res.FinalAnswer, 3), GraderRunID: id}, nil
		}
		last = fmt.Errorf("grading run %s finished %s without a grade", id, res.StopReason)
	}
	return ScoreResult{}, fmt.Errorf("scorer %s: %w (after %d grading runs)", g.name, last, g.opts.Attempts)
}

// runOrResume runs a run, or resumes it when it exists (a finished run
// gives its stored result).
func runOrResume(ctx context.Context, r *polyloop.Runner, id string, agent polyloop.Agent, task polyloop.Task) (polyloop.RunResult, error) {
	res, err := r.Run(ctx, id, agent, task)
	if errors.Is(err, polyloop.ErrRunExists) {
		return r.Resume(ctx, id, agent)
	}
	return res, err
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
