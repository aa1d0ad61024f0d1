package sweep

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/polyloop/polyloop/sweep/ledger"
)

// ScorerFailure counts the outcomes a scorer could not score (the
// ledger's failed scores, ledger.State.Failed): a scorer that fails
// everywhere leaves a group unscored, and says why here.
type ScorerFailure struct {
	Scorer string `json:"scorer"`
	// Outcomes counts the settled outcomes whose last attempt the scorer
	// failed on.
	Outcomes int `json:"outcomes"`
	// FirstRun is the first of them (in run id order) and FirstError its
	// error, cut to MaxFailureText bytes.
	FirstRun   string `json:"first_run"`
	FirstError string `json:"first_error"`
}

// MaxFailureText bounds ScorerFailure.FirstError: a line, not a command's
// standard error (polyloop samples --json gives that whole).
const MaxFailureText = 200

// addFailures counts the scorers' failures of an outcome's last attempt
// in fs, kept in scorer name order.
func addFailures(fs []ScorerFailure, last ledger.State) []ScorerFailure {
	for _, f := range last.Failed {
		i, found := slices.BinarySearchFunc(fs, f.Scorer, func(s ScorerFailure, name string) int { return strings.Compare(s.Scorer, name) })
		if !found {
			fs = slices.Insert(fs, i, ScorerFailure{Scorer: f.Scorer, FirstRun: last.RunID, FirstError: cutText(f.Error, MaxFailureText)})
		}
		fs[i].Outcomes++
	}
	return fs
}

// failuresOf is the failure of scorer in fs, a zero one when it has none.
func failuresOf(fs []ScorerFailure, scorer string) ScorerFailure {
	if i := slices.IndexFunc(fs, func(f ScorerFailure) bool { return f.Scorer == scorer }); i >= 0 {
		return fs[i]
	}
	return ScorerFailure{Scorer: scorer}
}

// cutText is s on one line, cut to at most n bytes at character
// boundaries: its start and its end (where a command's standard error
// says what failed) with " … " between.
func cutText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	const gap = " … "
	head := (n - len(gap)) / 2
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	tail := len(s) - (n - len(gap) - head)
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + gap + s[tail:]
}
