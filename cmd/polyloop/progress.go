package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/polyloop/polyloop"
	traj "github.com/polyloop/polyloop/internal/trajectory"
)

// progress is an EventSink that prints a run's progress, one line per fact:
// step, action, status, tokens and cost so far. On a terminal it uses
// colour (unless NO_COLOR is set or TERM is dumb) and shows the text a
// streaming model client delivers as it arrives, erasing a superseded
// candidate (see preview); piped, it writes plain lines and no streamed text.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	color bool
	// live: w is a terminal of width columns and height rows (0: unknown),
	// where the streamed text is shown.
	live          bool
	width, height int
	pv            preview
	prefix        string
	// since labels the running totals: the sink sees only this invocation.
	since  string
	tokens int64
	cost   float64
	// costUnknown is set once a reply had usage without a known cost;
	// tokensUnknown once a reply reported no usage at all.
	costUnknown, tokensUnknown bool
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, since: "so far"}
	if f := terminal(w); f != nil {
		// A live preview moves the cursor: a terminal without a
		// description (TERM unset or dumb) gets plain lines.
		term := os.Getenv("TERM")
		p.live, p.color = term != "" && term != "dumb", useColor(true, os.Getenv)
		p.width, p.height = terminalSize(f)
	}
	return p
}

// useColor decides colour for an output: only on a terminal, and not when
// NO_COLOR is set (https://no-color.org) or TERM is dumb (or unset: no
// terminal description to go by).
func useColor(terminal bool, getenv func(string) string) bool {
	term := getenv("TERM")
	return terminal && getenv("NO_COLOR") == "" && term != "" && term != "dumb"
}

// terminal is the terminal w writes to, or nil when w is not a character
// device.
func terminal(w io.Writer) *os.File {
	for u, ok := w.(interface{ Unwrap() io.Writer }); ok; u, ok = w.(interface{ Unwrap() io.Writer }) { // pipeWriter, visibleWriter
		w = u.Unwrap()
	}
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return f
}

const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiDim    = "\x1b[2m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
)

func (p *progress) paint(code, s string) string {
	if !p.color {
		return s
	}
	return code + s + ansiReset
}

// Emit implements polyloop.EventSink. A write failure is returned, as the
// contract asks; the runner counts it and the loop goes on.
// WantsDeltas implements polyloop.DeltaSink: streamed text is shown live on a
// terminal only; elsewhere the model is called without streaming.
func (p *progress) WantsDeltas() bool { return p.live }

func (p *progress) Emit(ctx context.Context, ev polyloop.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.render(ev)
	if out == "" {
		return nil
	}
	_, err := io.WriteString(p.w, out)
	return err
}

// render is what an event writes: a preview's change on a terminal, or a
// line (below the preview that became the reply, if one is shown).
func (p *progress) render(ev polyloop.Event) string {
	switch ev.Kind {
	case polyloop.EventModelDelta:
		if !p.live || ev.Delta == nil {
			return ""
		}
		return p.previewDelta(ev)
	case polyloop.EventCandidateSuperseded:
		if !p.live {
			return ""
		}
		return p.previewSuperseded(ev)
	}
	line := p.line(ev)
	if line == "" {
		return ""
	}
	lead := p.endPreview()
	if ev.Kind == polyloop.EventModelCallFinished && ev.Failure != nil && p.pv.shown {
		lead = p.erase() // a failed call's text was no reply
	}
	return lead + p.prefix + line + "\n"
}

func (p *progress) line(ev polyloop.Event) string {
	step := p.paint(ansiBold, fmt.Sprintf("step %-3d", ev.Step))
	switch ev.Kind {
	case polyloop.EventRunStarted:
		return visible(fmt.Sprintf("run %s started (agent %s)", ev.RunID, ev.Agent))
	case polyloop.EventRunResumed:
		p.since = "since resume"
		return visible(fmt.Sprintf("run %s resumed: %s — %s", ev.RunID, ev.Plan.Action, ev.Plan.Reason))
	case polyloop.EventModelCallFinished:
		return step + " " + p.modelLine(ev)
	case polyloop.EventActionStarted:
		return fmt.Sprintf("%s action %s%s %s", step, batchMember(ev.ActionID), describeAction(ev.Action, 70), p.paint(ansiDim, "["+string(ev.Replay)+"]"))
	case polyloop.EventActionFinished:
		return step + " " + p.outcomeLine(ev)
	case polyloop.EventStepCompleted:
		return p.decisionLine(step, ev.StepRecord)
	case polyloop.EventStepCopied:
		return step + " " + p.paint(ansiDim, "copied from the source (nothing runs again, nothing is billed)")
	case polyloop.EventConfigOverridden:
		return p.paint(ansiYellow, visible(fmt.Sprintf("configuration override recorded: %s", strings.Join(ev.Override.Fields, ", "))))
	case polyloop.EventRunFinished:
		return p.finishLine(ev)
	}
	return ""
}

// batchMember names an action of a batch of several ("a1.2 "), whose
// lines interleave with those of its batch's other actions: "" for the
// action of a batch of one (a1).
func batchMember(actionID string) string {
	if !strings.Contains(actionID, ".") {
		return ""
	}
	return actionID + " "
}

func (p *progress) modelLine(ev polyloop.Event) string {
	if ev.Failure != nil {
		line := p.paint(ansiRed, "model call failed: "+oneLine(ev.Failure.Message, -1))
		if ev.Usage == nil { // an error status: not billed
			return line
		}
		n, cost := p.count(*ev.Usage)
		return line + fmt.Sprintf(" (%s, %s; %s %s, %s)", n, cost, p.since, tokens(p.tokens, p.tokensUnknown), costProgress.cost(p.cost, p.costUnknown))
	}
	n, _ := p.count(ev.Reply.Usage)
	return fmt.Sprintf("model  %s (%s %s, %s)", n, p.since, tokens(p.tokens, p.tokensUnknown), costProgress.cost(p.cost, p.costUnknown))
}

// count adds a call's usage to the sums so far, as the run's totals do,
// and says its tokens and cost.
func (p *progress) count(u polyloop.Usage) (n, cost string) {
	known := u.InputTokens != 0 || u.OutputTokens != 0 || u.CachedTokens != 0
	p.tokens += u.Tokens()
	p.tokensUnknown = p.tokensUnknown || !known
	if u.CostUSD == nil || !known {
		p.costUnknown = true // no cost is an unknown cost, never $0
		return tokens(u.Tokens(), !known), costProgress.unknown
	}
	p.cost += *u.CostUSD
	return tokens(u.Tokens(), false), costProgress.cost(*u.CostUSD, false)
}

func (p *progress) outcomeLine(ev polyloop.Event) string {
	rec := ev.Settled()
	if rec == nil || rec.Outcome == nil {
		return "→ settled"
	}
	status := string(rec.Outcome.Status)
	switch rec.Outcome.Status {
	case polyloop.Executed:
		status = p.paint(ansiGreen, status)
	case polyloop.NotExecuted:
		status = p.paint(ansiYellow, status)
	case polyloop.EnvError:
		status = p.paint(ansiRed, status)
	}
	obs := oneLine(rec.Observation, 60)
	if rec.Synthetic {
		obs = "(synthetic) " + obs
	}
	return fmt.Sprintf("%s→ %s  %s", batchMember(rec.ResultID), status, p.paint(ansiDim, obs))
}

func (p *progress) decisionLine(step string, rec *polyloop.StepCompleted) string {
	switch rec.Decision {
	case polyloop.DecisionInvalid:
		return step + " " + p.paint(ansiYellow, "invalid reply: "+oneLine(rec.Feedback, 70))
	case polyloop.DecisionFinal:
		return step + " final answer: " + oneLine(rec.Answer, 70)
	}
	return ""
}

func (p *progress) finishLine(ev polyloop.Event) string {
	t := ev.Totals
	color := ansiGreen
	if ev.StopReason != polyloop.StopCompleted {
		color = ansiRed
	}
	cost := costProgress.cost(t.CostUSD, t.CostUnknown)
	return p.paint(color, fmt.Sprintf("finished: %s", ev.StopReason)) +
		fmt.Sprintf(" — %s, %s, %s", traj.StepsPhrase(*t), tokens(t.Tokens(), t.TokensUnknown), cost)
}

// describeAction is an action on one line: the tool and its arguments, or
// the code's language and first line.
func describeAction(a *polyloop.Action, max int) string {
	if a == nil {
		return ""
	}
	if a.IsCode() {
		lang := a.Lang
		if lang == "" {
			lang = "code"
		}
		return lang + ": " + oneLine(a.Code, max)
	}
	return a.Tool + " " + oneLine(argsText(a.Args), max)
}

// argsText is JSON arguments for people: as stored, but with &, < and >
// unescaped (encoding/json escapes them for HTML).
func argsText(raw json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return string(raw)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// oneLine cuts s to its first max characters (all for a negative max) on
// one line, its control characters escaped (visible).
func oneLine(s string, max int) string {
	s = visible(strings.Join(strings.Fields(s), " "))
	if max < 0 || utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max]) + "…"
}
