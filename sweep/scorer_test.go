package sweep

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
)

func completed(answer string, target ...string) ScoreInput {
	return ScoreInput{RunID: "r", Task: Task{ID: "t", Input: "q", Target: target}, StopReason: polyloop.StopCompleted, Answer: answer}
}

func mustRegex(t *testing.T, pattern string, o MatchOptions) Scorer {
	t.Helper()
	sc, err := Regex("regex", RegexOptions{Pattern: pattern, MatchOptions: o})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestAnswerScorers(t *testing.T) {
	t.Parallel()
	exact, exactCI := Exact("exact", MatchOptions{}), Exact("exact", MatchOptions{IgnoreCase: true})
	incl := Includes("includes", MatchOptions{IgnoreCase: true})
	re := mustRegex(t, `(?i)answer:\s*(\w+)`, MatchOptions{IgnoreCase: true})
	reFree := mustRegex(t, `\d{3}-\d{4}`, MatchOptions{})
	num := Numeric("numeric", NumericOptions{})
	numTol := Numeric("numeric", NumericOptions{Tolerance: 0.01, Relative: 0.001})
	for _, tt := range []struct {
		name string
		sc   Scorer
		in   ScoreInput
		want float64
	}{
		{"exact equal", exact, completed("Paris", "Paris"), 1},
		{"exact trimmed", exact, completed("  Paris\n", "Paris"), 1},
		{"exact case", exact, completed("paris", "Paris"), 0},
		{"exact case ignored", exactCI, completed("PARIS", "Paris"), 1},
		{"exact second target", exact, completed("4", "four", "4"), 1},
		{"exact longer", exact, completed("Paris, France", "Paris"), 0},
		{"includes", incl, completed("It is Paris, France.", "paris"), 1},
		{"includes no", incl, completed("Lyon", "Paris"), 0},
		{"regex group equals target", re, completed("thinking… Answer: Blue", "blue"), 1},
		{"regex group other", re, completed("Answer: red", "blue"), 0},
		{"regex not found", re, completed("blue", "blue"), 0},
		{"regex without target", reFree, completed("call 555-1234 now"), 1},
		{"regex without target, no match", reFree, completed("call me"), 0},
		{"numeric last number", num, completed("3 + 4 is 7", "7"), 1},
		{"numeric commas and decimals", num, completed("total: 1,234.50", "1234.5"), 1},
		{"numeric wrong", num, completed("7.1", "7"), 0},
		{"numeric no number", num, completed("seven", "7"), 0},
		{"numeric tolerance", numTol, completed("3.141", "3.14159"), 1},
		{"numeric relative", numTol, completed("100150", "100000"), 0},
		{"numeric relative within", numTol, completed("100090", "100000"), 1},
		{"numeric exponent", num, completed("about 1.5e3", "1500"), 1},
		{"numeric negative", num, completed("it is -2", "-2"), 1},
		{"numeric beside words", num, completed("2", "four", "4"), 0},
		{"numeric beside words, right", num, completed("4", "four", "4"), 1},
		{"no answer: max_steps", exact, ScoreInput{RunID: "r", Task: Task{ID: "t", Target: []string{"x"}}, StopReason: polyloop.StopMaxSteps}, 0},
		{"no answer: env_error", num, ScoreInput{RunID: "r", Task: Task{ID: "t", Target: []string{"1"}}, StopReason: polyloop.StopEnvError}, 0},
	} {
		r, err := tt.sc.Score(context.Background(), tt.in)
		if err != nil || r.Value != tt.want {
			t.Errorf("%s: %+v, %v; want %v", tt.name, r, err, tt.want)
		}
	}
	for _, tt := range []struct {
		name string
		sc   Scorer
		in   ScoreInput
	}{
		{"exact without target", exact, completed("x")},
		{"numeric target not a number", num, completed("7", "seven")},
	} {
		if r, err := tt.sc.Score(context.Background(), tt.in); err == nil {
			t.Errorf("%s: scored %+v, want an error", tt.name, r)
		}
	}
	if _, err := Regex("bad", RegexOptions{Pattern: "("}); err == nil {
		t.Error("a bad pattern: no error")
	}
}

// Versions tell configurations apart and stay the same for the same one.
func TestScorerVersions(t *testing.T) {
	t.Parallel()
	a, b := Exact("x", MatchOptions{}), Exact("y", MatchOptions{})
	c := Exact("x", MatchOptions{IgnoreCase: true})
	if a.Version() != b.Version() || a.Version() == c.Version() || !strings.HasPrefix(a.Version(), "exact/1:") {
		t.Errorf("versions %s %s %s", a.Version(), b.Version(), c.Version())
	}
	if Numeric("n", NumericOptions{Tolerance: 1}).Version() == Numeric("n", NumericOptions{}).Version() {
		t.Error("numeric tolerances share a version")
	}
}

func TestCommandScorer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "score.sh")
	write := func(body string) {
		if err := os.WriteFile(script, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name, body string
		want       float64
		why        string
		fails      bool
	}{
		{"exit 0", `grep -q '"answer":"42"' && exit 0; exit 1`, 1, "", false},
		{"exit 1", `echo "not it"; exit 1`, 0, "not it", false},
		{"json score", `echo '{"score": 0.25, "explanation": "a quarter"}'`, 0.25, "a quarter", false},
		{"json out of range", `echo '{"score": 2}'`, 1, `{"score": 2}`, false},
		{"exit 2", `echo broken >&2; exit 2`, 0, "", true},
		{"reads its input", `cat > /dev/null; test "$(pwd)" = "` + dir + `"`, 1, "", false},
	} {
		write(tt.body)
		sc, err := Command("cmd", CommandOptions{Args: []string{"./score.sh"}, Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		r, err := sc.Score(context.Background(), completed("42", "42"))
		switch {
		case tt.fails && err == nil:
			t.Errorf("%s: scored %+v, want an error", tt.name, r)
		case !tt.fails && (err != nil || r.Value != tt.want || r.Explanation != tt.why):
			t.Errorf("%s: %+v, %v; want %v (%q)", tt.name, r, err, tt.want, tt.why)
		}
	}
	write("exit 0")
	v1, _ := Command("cmd", CommandOptions{Args: []string{"./score.sh"}, Dir: dir})
	write("exit 1")
	v2, _ := Command("cmd", CommandOptions{Args: []string{"./score.sh"}, Dir: dir})
	if v1.Version() == v2.Version() {
		t.Error("editing the script kept the scorer's version")
	}
	write("sleep 5")
	slow, _ := Command("cmd", CommandOptions{Args: []string{"./score.sh"}, Dir: dir})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := slow.Score(ctx, completed("x", "x")); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled scoring: %v", err)
	}
	if _, err := Command("cmd", CommandOptions{}); err == nil {
		t.Error("no command: no error")
	}
}

func TestParseGrade(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]float64{
		"Looks right.\nGRADE: C": 1, "grade: p": 0.5, "GRADE: I": 0, "GRADE: C\nwait, no.\nGRADE: I": 0,
		"Grade: 0.75": 0.75, "GRADE: **C**": 1,
	} {
		if got, ok := parseGrade(text); !ok || got != want {
			t.Errorf("parseGrade(%q) = %v, %v; want %v", text, got, ok, want)
		}
	}
	for _, text := range []string{"correct", "GRADE: X", "GRADE: 7"} {
		if got, ok := parseGrade(text); ok {
			t.Errorf("parseGrade(%q) = %v, want no grade", text, got)
		}
	}
}

// A model-graded scorer's grading call is a run of its own in the store,
// reused when the run is scored again.
func TestModelGradedScorer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	model := scriptmodel.New(scriptmodel.Reply("The answer agrees.\nGRADE: C"))
	grader := &Agent{Agent: polyloop.Agent{Name: "grader", Limits: polyloop.Limits{MaxSteps: 2}}, Model: model,
		Parser: gradeParser{}, Executor: noExec{}}
	sc := ModelGraded("judge", GraderOptions{Grader: grader})
	m := &faultModel{}
	s, err := New(Definition{Name: "g", Agents: []*Agent{testAgent("a", m)}, Tasks: numberTasks(2), Scorers: []Scorer{sc}})
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New()
	res, err := s.Run(ctx, RunOptions{Store: store})
	if err != nil || res.Progress.Done != 2 || res.Progress.ScoreFailures != 0 {
		t.Fatalf("%+v, %v", res, err)
	}
	states, err := store.Page(ctx, "g", "", 10)
	if err != nil || len(states) != 2 {
		t.Fatal(states, err)
	}
	score := states[0].Scores[0]
	if score.Value != 1 || score.GraderRunID != states[0].RunID+":grade:judge:"+agentKey(grader.Hash())+":1" {
		t.Errorf("score %+v", score)
	}
	log, err := polyloop.ReadLog(ctx, store, score.GraderRunID)
	if err != nil || log.Finished() == nil || !strings.Contains(log.Started().Snapshot.Task.Input, "[Answer]\n2") {
		t.Fatalf("the grading run's log: %+v, %v", log.Started(), err)
	}
	calls := model.Calls()
	if _, err := sc.Score(ctx, ScoreInput{RunID: states[0].RunID, Task: Task{ID: "t1", Input: "1", Target: []string{"2"}},
		StopReason: polyloop.StopCompleted, Answer: "2", store: store}); err != nil || model.Calls() != calls {
		t.Errorf("scoring again: %v, %d new model calls", err, model.Calls()-calls)
	}
}

// gradeParser makes every reply final.
type gradeParser struct{}

func (gradeParser) Parse(r polyloop.ModelReply) polyloop.Decision {
	return polyloop.Final{Answer: r.Text}
}

type noExec struct{}

func (noExec) Execute(context.Context, polyloop.Action) (polyloop.ActionOutcome, error) {
	return polyloop.ActionOutcome{Status: polyloop.NotExecuted}, nil
}
