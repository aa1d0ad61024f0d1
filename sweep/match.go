package sweep

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// MatchOptions change how the answer scorers compare text. Both sides are
// trimmed of surrounding white space first.
type MatchOptions struct {
	// IgnoreCase compares without case (Unicode simple folding).
	IgnoreCase bool `json:"ignore_case,omitempty"`
}

func (o MatchOptions) equal(a, b string) bool {
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if o.IgnoreCase {
		return strings.EqualFold(a, b)
	}
	return a == b
}

func (o MatchOptions) contains(s, sub string) bool {
	sub = strings.TrimSpace(sub)
	if o.IgnoreCase {
		return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
	}
	return strings.Contains(s, sub)
}

// answerScorer is a scorer of a completed run's answer against the task's
// targets; a run without an answer scores 0.
type answerScorer struct {
	name, version, desc string
	needsTarget         bool
	match               func(answer string, targets []string) (float64, string, error)
}

func (s *answerScorer) Name() string        { return s.name }
func (s *answerScorer) Version() string     { return s.version }
func (s *answerScorer) Description() string { return s.desc }

// Score implements Scorer.
func (s *answerScorer) Score(ctx context.Context, in ScoreInput) (ScoreResult, error) {
	if err := ctx.Err(); err != nil {
		return ScoreResult{}, err
	}
	if r, ok := noAnswer(in); ok {
		return r, nil
	}
	if s.needsTarget && len(in.Task.Target) == 0 {
		return ScoreResult{}, fmt.Errorf("scorer %s: task %q has no target to compare the answer with", s.name, in.Task.ID)
	}
	v, why, err := s.match(in.Answer, in.Task.Target)
	if err != nil {
		return ScoreResult{}, fmt.Errorf("scorer %s: task %q: %w", s.name, in.Task.ID, err)
	}
	return ScoreResult{Value: v, Explanation: why}, nil
}

func verdict(ok bool, why string) (float64, string, error) {
	if ok {
		return 1, why, nil
	}
	return 0, why, nil
}

// Exact scores 1 when the answer equals one of the task's targets.
func Exact(name string, o MatchOptions) Scorer {
	desc := "the answer equals a target (trimmed)"
	if o.IgnoreCase {
		desc = "the answer equals a target (trimmed, case ignored)"
	}
	return &answerScorer{name: name, version: versionOf("exact", 1, o), desc: desc, needsTarget: true,
		match: func(answer string, targets []string) (float64, string, error) {
			for _, t := range targets {
				if o.equal(answer, t) {
					return verdict(true, fmt.Sprintf("equals the target %q", t))
				}
			}
			return verdict(false, "equals no target")
		}}
}

// Includes scores 1 when the answer contains one of the task's targets.
func Includes(name string, o MatchOptions) Scorer {
	desc := "the answer contains a target"
	if o.IgnoreCase {
		desc = "the answer contains a target (case ignored)"
	}
	return &answerScorer{name: name, version: versionOf("includes", 1, o), desc: desc, needsTarget: true,
		match: func(answer string, targets []string) (float64, string, error) {
			for _, t := range targets {
				if o.contains(answer, t) {
					return verdict(true, fmt.Sprintf("contains the target %q", t))
				}
			}
			return verdict(false, "contains no target")
		}}
}

// RegexOptions configure a regex scorer.
type RegexOptions struct {
	// Pattern is searched in the answer (RE2 syntax).
	Pattern string `json:"pattern"`
	MatchOptions
}

// Regex finds the pattern in the answer. Its first capturing group, or
// else the whole match, is the extracted answer: with a target it must
// equal one (as Exact compares); without, a match scores 1.
func Regex(name string, o RegexOptions) (Scorer, error) {
	pattern := o.Pattern
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("scorer %s: pattern: %w", name, err)
	}
	return &answerScorer{name: name, version: versionOf("regex", 1, o),
		desc: fmt.Sprintf("the answer matches /%s/, its extracted part equal to a target when the task has one", pattern),
		match: func(answer string, targets []string) (float64, string, error) {
			m := re.FindStringSubmatch(answer)
			if m == nil {
				return verdict(false, "the pattern is not found")
			}
			got := m[0]
			if len(m) > 1 {
				got = m[1]
			}
			if len(targets) == 0 {
				return verdict(true, fmt.Sprintf("found %q", got))
			}
			for _, t := range targets {
				if o.MatchOptions.equal(got, t) {
					return verdict(true, fmt.Sprintf("extracted %q, a target", got))
				}
			}
			return verdict(false, fmt.Sprintf("extracted %q, no target", got))
		}}, nil
}

// NumericOptions set how close a number must be to its target.
type NumericOptions struct {
	// Tolerance is the absolute difference allowed; Relative the
	// difference allowed as a fraction of the target's magnitude. The
	// larger of the two applies; both zero: equal numbers.
	Tolerance float64 `json:"tolerance,omitempty"`
	Relative  float64 `json:"relative,omitempty"`
}

// numberPattern finds numbers in text: an optional sign, digits (commas
// between groups of three allowed), a fraction, an exponent.
var numberPattern = lazyRegexp(`[-+]?(?:\d+(?:,\d{3})*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?`)

// parseNumber reads a number as numberPattern finds it.
func parseNumber(s string) (float64, bool) {
	v, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(s), ",", ""), 64)
	return v, err == nil && !math.IsNaN(v) && !math.IsInf(v, 0)
}

// Numeric takes the last number in the answer and scores 1 when it is
// within the tolerance of one of the task's targets that are numbers (at
// least one must be; the others are skipped).
func Numeric(name string, o NumericOptions) Scorer {
	desc := "the answer's last number equals a target"
	if o.Tolerance > 0 || o.Relative > 0 {
		desc = fmt.Sprintf("the answer's last number is within %g (or %g relative) of a target", o.Tolerance, o.Relative)
	}
	return &answerScorer{name: name, version: versionOf("numeric", 1, o), desc: desc, needsTarget: true,
		match: func(answer string, targets []string) (float64, string, error) {
			found := numberPattern().FindAllString(answer, -1)
			if len(found) == 0 {
				return verdict(false, "no number in the answer")
			}
			got, ok := parseNumber(found[len(found)-1])
			if !ok {
				return verdict(false, fmt.Sprintf("%q is not a number", found[len(found)-1]))
			}
			numbers := 0
			for _, t := range targets {
				want, ok := parseNumber(t)
				if !ok {
					continue // a target in words ("four") beside the number
				}
				numbers++
				if math.Abs(got-want) <= math.Max(o.Tolerance, o.Relative*math.Abs(want)) {
					return verdict(true, fmt.Sprintf("%g is within tolerance of the target %s", got, t))
				}
			}
			if numbers == 0 {
				return 0, "", fmt.Errorf("no target is a number (%q)", targets)
			}
			return verdict(false, fmt.Sprintf("%g is not within tolerance of any target", got))
		}}
}
