package polyloop_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
)

// outcomeExec is a third-party executor that returns out for every action.
type outcomeExec struct{ out polyloop.ActionOutcome }

func (e outcomeExec) Execute(context.Context, polyloop.Action) (polyloop.ActionOutcome, error) {
	return e.out, nil
}

// runOutcome runs one action of an executor returning out, then a final
// answer, and returns the result, the log and the model's requests.
func runOutcome(t *testing.T, agent polyloop.Agent, out polyloop.ActionOutcome) (polyloop.RunResult, polyloop.RunLog, []polyloop.ModelRequest) {
	t.Helper()
	store := memstore.New()
	rec := &requestRecorder{inner: scriptmodel.New(call(1, "echo", nil), scriptmodel.Reply("done"))}
	res, err := newRunner(rec, store, outcomeExec{out}).Run(context.Background(), "r", agent, polyloop.Task{Input: "t"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	log, err := polyloop.ReadLog(context.Background(), store, "r")
	if err != nil {
		t.Fatalf("the log does not read back: %v", err)
	}
	return res, log, rec.reqs
}

// An executor's observation is bounded by the library to the log's limit
// (MaxObservationBytes), whatever the executor: a 70 MiB observation from a
// third-party executor is cut at a character boundary with a note, the
// characters dropped are counted in truncated_chars, and the step is
// recorded — never an Append beyond MaxRecordBytes that fails the run as a
// store failure, again on every resume.
func TestObservationBoundedToTheLog(t *testing.T) {
	huge := strings.Repeat("é", 35<<20) // 70 MiB, two bytes a character
	res, log, reqs := runOutcome(t, testAgent(), polyloop.ActionOutcome{Status: polyloop.Executed, Observation: huge, TruncatedChars: 7})
	if res.StopReason != polyloop.StopCompleted {
		t.Fatalf("stop %s, want completed", res.StopReason)
	}
	s := log.Steps()[0]
	if len(s.Observation) > polyloop.MaxObservationBytes || !utf8.ValidString(s.Observation) {
		t.Fatalf("the stored observation has %d bytes (valid UTF-8: %v), want at most %d", len(s.Observation), utf8.ValidString(s.Observation), polyloop.MaxObservationBytes)
	}
	kept, _, ok := strings.Cut(s.Observation, "\n[… ")
	if !ok || !strings.HasSuffix(s.Observation, " characters truncated]") || strings.Trim(kept, "é") != "" {
		t.Fatalf("the observation does not end with the truncation note: …%q", s.Observation[max(0, len(s.Observation)-80):])
	}
	if dropped := 35<<20 - utf8.RuneCountInString(kept); s.TruncatedChars != dropped+7 || s.Outcome.ExecutorTruncated != 7 {
		t.Errorf("truncated_chars %d (executor %d), want the %d characters dropped plus the executor's 7", s.TruncatedChars, s.Outcome.ExecutorTruncated, dropped)
	}
	if !strings.Contains(s.Observation, "["+"… "+itoa(s.TruncatedChars-7)+" characters truncated]") {
		t.Errorf("the note does not count the characters dropped: …%q", s.Observation[len(s.Observation)-60:])
	}
	second := reqs[1].Messages
	if last := second[len(second)-1]; last.Content != s.Observation {
		t.Errorf("the model saw %d bytes, the log keeps %d: live and resumed histories differ", len(last.Content), len(s.Observation))
	}
}

// The snapshot's ObservationLimit (characters) and MaxObservationBytes
// both hold: many characters within the limit can still be too many bytes.
func TestObservationLimitInCharactersAndBytes(t *testing.T) {
	agent := testAgent()
	agent.Limits.ObservationLimit = 5
	_, log, _ := runOutcome(t, agent, polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "abcdefgh"})
	if s := log.Steps()[0]; s.Observation != "abcde\n[… 3 characters truncated]" || s.TruncatedChars != 3 {
		t.Errorf("a character limit: %q, truncated %d", s.Observation, s.TruncatedChars)
	}
	agent.Limits.ObservationLimit = 4 << 20 // 4 Mi characters of 4 bytes: 16 MiB
	_, log, _ = runOutcome(t, agent, polyloop.ActionOutcome{Status: polyloop.Executed, Observation: strings.Repeat("😀", 5<<20)})
	if s := log.Steps()[0]; len(s.Observation) > polyloop.MaxObservationBytes || s.TruncatedChars <= 1<<20 {
		t.Errorf("within the character limit but beyond the bytes: %d bytes kept, %d characters dropped", len(s.Observation), s.TruncatedChars)
	}
}

// An observation that is not UTF-8 is kept as the log reads it back
// (ValidText): the model sees, live, what a resumed run's history holds.
func TestObservationIsValidText(t *testing.T) {
	_, log, reqs := runOutcome(t, testAgent(), polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "ok \xff end"})
	second := reqs[1].Messages
	live := second[len(second)-1].Content
	resumed := polyloop.History(log)
	if live != "ok \uFFFD end" || resumed[len(resumed)-2].Content != live {
		t.Errorf("live observation %q, the log's history %q; want both %q", live, resumed[len(resumed)-2].Content, "ok \uFFFD end")
	}
}

// The executor's own text for not_executed and env_error is kept as the
// step's audit, at most MaxAuditBytes, cut at a character boundary and
// marked with "…"; a short text is kept whole.
func TestAuditBound(t *testing.T) {
	long := strings.Repeat("ab€", 1000) // 5000 bytes; "€" is three
	for _, status := range []polyloop.ActionStatus{polyloop.NotExecuted, polyloop.EnvError} {
		for _, text := range []string{long, "x" + long, "xx" + long, "short text"} {
			_, log, _ := runOutcome(t, testAgent(), polyloop.ActionOutcome{Status: status, Observation: text})
			audit := log.Steps()[0].Audit
			if len(text) <= polyloop.MaxAuditBytes {
				if audit != text {
					t.Errorf("%s: a short text is kept as %q", status, audit)
				}
				continue
			}
			kept, ok := strings.CutSuffix(audit, "…")
			if len(audit) > polyloop.MaxAuditBytes || !ok || !utf8.ValidString(audit) || !strings.HasPrefix(text, kept) || len(kept) < polyloop.MaxAuditBytes-len("…")-2 {
				t.Errorf("%s: audit of %d bytes (valid UTF-8: %v), want at most %d, a prefix of the text cut at a character boundary, then …", status, len(audit), utf8.ValidString(audit), polyloop.MaxAuditBytes)
			}
		}
	}
}
