package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/envsnap"
	"github.com/polyloop/polyloop/internal/costtext"
	"github.com/polyloop/polyloop/internal/runstats"
	"github.com/polyloop/polyloop/internal/trajectory"
	sweeps "github.com/polyloop/polyloop/sweep"
)

// funcs are the templates' functions. None returns template.HTML: every
// text they give is escaped by html/template where it lands.
var funcs = template.FuncMap{
	"cut":         cut,
	"pretty":      prettyJSON,
	"args":        argsText,
	"json":        recordJSON,
	"usd":         usd,
	"cost":        callCost,
	"tokens":      tokensText,
	"steps":       trajectory.StepCount,
	"stepsPhrase": trajectory.StepsPhrase,
	"when":        when,
	"clock":       func(t time.Time) string { return t.UTC().Format("15:04:05.000") },
	"dur":         durText,
	"pct":         func(n, of int) string { return pct(n, of) },
	"num":         num,
	"exact":       exact,
	"add":         func(a, b int) int { return a + b },
	"sub":         func(a, b int) int { return a - b },
	"sampleScore": func(r sweeps.Sample, scorer string) *sweeps.SampleScore {
		if sc, ok := r.Scores[scorer]; ok {
			return &sc
		}
		return nil
	},
	"status":   statusOf,
	"finished": func(s polyloop.RunSummary) string { return runStatus(s) },
	"runClass": statusClass,
	"awaiting": awaitingText,
	"snapshot": func(s polyloop.Snapshot) string { return prettyJSON(s) },
	"short":    shortHash,
	"fileKind": fileKind,
	"stepOf":   func(st *trajectory.Step, p *runPage) stepData { return stepData{Step: st, Page: p} },
	"pick":     pick,
	"excerpt":  excerpt,
	"histOf":   func(name string, c chart, d runstats.Dist, cost bool) histData { return histData{name, c, d, cost} },
	"spendOf":  func(name string, s runstats.Spend) spendData { return spendData{name, s} },
	"bound":    bound,
	"add2":     func(a, b float64) float64 { return a + b + 4 },
	"deref":    func(v *float64) float64 { return *v },
	"first":    func(s string) string { f, _, _ := strings.Cut(s, " "); return f },
	"divIndex": divIndex,
	"gateOf":   func(g *trajectory.Gate, full bool) gateData { return gateData{g, full} },
}

// histData is what the hist template draws: a histogram and its
// distribution's summary.
type histData struct {
	Name  string
	Chart chart
	Dist  runstats.Dist
	Cost  bool
}

// spendData is what the spend template shows: a group's spend, named as
// in polyloop stats --json.
type spendData struct {
	Name  string
	Spend runstats.Spend
}

// bound is a sum as people read it: a lower bound marked "≥", a sum none
// of which is known "unknown" — never the known part as the whole.
func bound(s string, zero, unknown bool) string {
	switch {
	case !unknown:
		return s
	case zero:
		return "unknown"
	}
	return "≥ " + s
}

// gateData is what the gate template needs: the gate, and whether texts
// are shown whole.
type gateData struct {
	Gate *trajectory.Gate
	Full bool
}

// pick is a compare row's step of one side (of trajectory t), for the
// step template.
func pick(st *trajectory.Step, t *trajectory.Trajectory, full bool) stepData {
	return stepData{Step: st, Page: &runPage{Full: full, T: t}}
}

// maxText is how much of a text a page shows unless asked for all.
const maxText = 4000

// clipped is a text cut for a page: Text and how many characters were
// left out.
type clipped struct {
	Text string
	More int
}

func cut(s string, full bool) clipped {
	if full || len(s) <= maxText {
		return clipped{Text: s}
	}
	r := []rune(s)
	if len(r) <= maxText {
		return clipped{Text: s}
	}
	return clipped{Text: string(r[:maxText]), More: len(r) - maxText}
}

// prettyJSON indents a value as JSON, without HTML escaping (the template
// escapes it).
func prettyJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("<not encodable: %v>", err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// argsText is tool arguments as people read them: indented JSON, or the
// raw text when it is not JSON.
func argsText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	return prettyJSON(v)
}

// recordJSON is a JSON value of a record as people read it: indented, in
// the record's own order, with the <, > and & that encoding/json escapes
// shown as themselves (the template escapes them for the page); the raw
// text when it is not JSON. Cheaper than argsText: nothing is decoded.
func recordJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return unescapeHTML(buf.Bytes())
}

// unescapeHTML turns JSON's \u003c, \u003e and \u0026 escapes back into
// the characters. Every backslash in JSON starts an escape, so a scan that
// copies the other escapes whole is exact.
func unescapeHTML(b []byte) string {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return string(b)
	}
	var out strings.Builder
	out.Grow(len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 == len(b) {
			out.WriteByte(b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			if c, ok := htmlEscapes[strings.ToLower(string(b[i+2:i+6]))]; ok {
				out.WriteByte(c)
				i += 5
				continue
			}
		}
		out.Write(b[i : i+2])
		i++
	}
	return out.String()
}

var htmlEscapes = map[string]byte{"003c": '<', "003e": '>', "0026": '&'}

// usd is a cost to 6 significant digits, as polyloop stats prints it.
func usd(v float64) string { return costtext.USD(v, -1) }

// callCost is a call's cost, or "cost unknown".
func callCost(u polyloop.Usage) string {
	if u.CostUSD == nil {
		return "cost unknown"
	}
	return usd(*u.CostUSD)
}

// tokensText is a run's tokens: "≥ 120" when a lower bound, "unknown"
// when none is known.
func tokensText(t polyloop.Totals) string {
	return bound(strconv.FormatInt(t.Tokens(), 10), t.Tokens() == 0, t.TokensUnknown)
}

func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func durText(d time.Duration) string {
	switch {
	case d <= 0:
		return ""
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

func pct(n, of int) string {
	if of == 0 {
		return "—"
	}
	return strconv.FormatFloat(100*float64(n)/float64(of), 'f', 1, 64) + "%"
}

// num is a statistic for people: counts in full, costs to 6 digits,
// "unknown" when nil.
func num(v *float64, isCost bool) string {
	switch {
	case v == nil:
		return "unknown"
	case isCost:
		return usd(*v)
	default:
		return strconv.FormatFloat(*v, 'f', -1, 64)
	}
}

// exact is a statistic at full float64 precision, for data attributes
// ("null" when unknown, as in polyloop stats --json).
func exact(v any) string {
	switch v := v.(type) {
	case *float64:
		if v == nil {
			return "null"
		}
		return strconv.FormatFloat(*v, 'g', -1, 64)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case int:
		return strconv.Itoa(v)
	}
	return fmt.Sprint(v)
}

// statusOf is a settled action's status, or "unknown".
func statusOf(a *polyloop.SettledAction) string {
	if a == nil || a.Outcome == nil {
		return "unknown"
	}
	return string(a.Outcome.Status)
}

// runStatus is a listed run's status: its stop reason, what a suspended
// run awaits, or "unfinished".
func runStatus(s polyloop.RunSummary) string {
	switch {
	case s.Finished:
		return string(s.StopReason)
	case s.Awaiting != "":
		return "awaiting " + strings.ReplaceAll(s.Awaiting, "+", " and ")
	}
	return "unfinished"
}

// statusClass is the CSS class of a listed run's status.
func statusClass(s polyloop.RunSummary) string {
	switch {
	case s.Finished:
		return string(s.StopReason)
	case s.Awaiting != "":
		return "awaiting"
	}
	return "unfinished"
}

// awaitingText says what a suspended run awaits, as the runs list does.
func awaitingText(s *polyloop.Suspension) string {
	switch {
	case len(s.Approvals) > 0 && len(s.Deliveries) > 0:
		return "awaiting approval and delivery"
	case len(s.Approvals) > 0:
		return "awaiting approval"
	}
	return "awaiting delivery"
}

// shortHash is a snapshot hash cut for a table cell.
func shortHash(h string) string {
	h = strings.TrimPrefix(h, "sha256:")
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// excerpt is the first n characters of a one-line rendering of s.
func excerpt(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// divIndex reports whether a divergence names one action of its step's
// batch (Divergence.Index applies).
func divIndex(d *polyloop.Divergence) bool { return d.What == "outcome" || d.What == "observation" }

// fileKind names how a path differs between the environments of the
// compared runs A and B.
func fileKind(k envsnap.ChangeKind) string {
	switch k {
	case envsnap.Added:
		return "added"
	case envsnap.Removed:
		return "removed"
	case envsnap.Changed:
		return "changed"
	case envsnap.OnlyA:
		return "A only"
	case envsnap.OnlyB:
		return "B only"
	}
	return string(k)
}
