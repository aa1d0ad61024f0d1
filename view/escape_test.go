package view_test

import (
	"context"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runfixture"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/view"
)

// Hostile texts, planted where a model, a tool or a caller puts text.
const (
	scriptTag = `<script>alert("xss")</script>`
	jsURL     = `javascript:alert(1)`
	textarea  = `</textarea><img src=x onerror=alert(2)>`
	quotes    = `" onmouseover="alert(3)" x='`
	hostileID = `run"><script>alert(4)</script>` + jsURL
)

// plantHostile writes runs whose every text is hostile: the run id and
// agent name, the task and system prompt, the reply, the tool arguments,
// the observation, the audit text of an unknown tool, the final answer;
// one run finished, one left unfinished (the live page); the gates' texts;
// a memory run's maintenance (the proposal, the values written, the write
// ids and the proposers' run ids).
func plantHostile(t *testing.T) *memstore.Store {
	t.Helper()
	st := memstore.New()
	clock := runfixture.NewClock(runfixture.Base)
	runfixture.Run(t, runfixture.Runner(st, clock, 0.000001, hostileTurns()...), hostileID, hostileAgent(), "task "+hostileAll)
	runfixture.Crashed(t, st, clock, 4, hostileID+"-open", hostileAgent(), "task "+hostileAll, hostileTurns()...)
	plantHostileGates(t, st, clock)
	runfixture.Remembering(t, st, clock, hostileID+"-memory", "note "+hostileAll)
	return st
}

// plantHostileGates writes a run whose gates' texts are hostile — the
// arguments, who answered, the note, the delivered observation — and a
// run suspended at a gate with hostile arguments.
func plantHostileGates(t *testing.T, st *memstore.Store, clock *runfixture.Clock) {
	t.Helper()
	ctx := context.Background()
	turns := []scriptmodel.Turn{runfixture.Batch(runfixture.Send("c1", "to "+hostileAll), runfixture.Book("c2", "room "+hostileAll))}
	r := runfixture.GateRunner(st, clock, turns...)
	for _, id := range []string{hostileID + "-gate", hostileID + "-gate-open"} {
		if res := runfixture.Run(t, r, id, runfixture.GateAgent(), "task "+hostileAll); res.Suspended == nil {
			t.Fatalf("%s: not suspended", id)
		}
		r = runfixture.GateRunner(st, clock, turns...)
	}
	id := hostileID + "-gate"
	if err := r.Approve(ctx, id, "c1", polyloop.ApprovalDecision{By: "by " + hostileAll, Note: "note " + hostileAll}); err != nil {
		t.Fatal(err)
	}
	if err := r.Deliver(ctx, id, "c2", polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "delivered " + hostileAll}, "by "+hostileAll); err != nil {
		t.Fatal(err)
	}
}

const hostileAll = scriptTag + " " + jsURL + " " + textarea + " " + quotes

func hostileAgent() polyloop.Agent {
	return runfixture.Agent("agent"+quotes+scriptTag, "system "+hostileAll)
}

func hostileTurns() []scriptmodel.Turn {
	arg := strings.ReplaceAll(hostileAll, `"`, `\"`)
	return []scriptmodel.Turn{
		{Text: "reply " + hostileAll, ToolCalls: []polyloop.ToolCall{
			{ID: "c1" + quotes, Name: "echo", Args: []byte(`{"text":"observation ` + arg + `"}`)},
			{ID: "c2", Name: "tool" + scriptTag, Args: []byte(`{"text":"` + arg + `"}`)},
		}},
		scriptmodel.Reply("answer " + hostileAll),
	}
}

// TestHostileTextRendersInert: every planted text reaches the pages as
// text — never as an element, an attribute, a handler or a URL.
func TestHostileTextRendersInert(t *testing.T) {
	t.Parallel()
	st := plantHostile(t)
	s, err := view.New(view.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	id := escapeQuery(hostileID)
	pages := []string{
		"/", "/?agent=" + escapeQuery("agent"+quotes+scriptTag), "/?sort=tokens",
		"/run?id=" + id, "/run?id=" + id + "&full=1", "/run?id=" + escapeQuery(hostileID+"-open"),
		"/compare?a=" + id + "&b=" + escapeQuery(hostileID+"-open"),
		"/stats", "/stats?by=agent", "/stats?by=hash", "/run?id=" + escapeQuery(scriptTag),
		"/run?id=" + escapeQuery(hostileID+"-gate"), "/run?id=" + escapeQuery(hostileID+"-gate-open"),
		"/run?id=" + escapeQuery(hostileID+"-memory"), "/run?id=" + escapeQuery(hostileID+"-memory/1~:proposal.1"),
	}
	for _, p := range pages {
		_, body := get(t, s, "GET", p)
		checkInert(t, p, body)
	}
	body := mustGet(t, s, "/run?id="+id)
	text := textOf(t, body)
	for _, want := range []string{hostileID, "reply " + scriptTag, textarea, quotes, "observation " + scriptTag, "answer " + scriptTag, jsURL, `unknown tool "tool<script>`} {
		if !strings.Contains(text, want) {
			t.Errorf("the run page does not show %q as text", want)
		}
	}
	text = textOf(t, mustGet(t, s, "/run?id="+escapeQuery(hostileID+"-gate")))
	for _, want := range []string{"by " + scriptTag, "note " + scriptTag, `"to <script>alert(\"xss\")</script>`, "delivered " + scriptTag} {
		if !strings.Contains(text, want) {
			t.Errorf("the gated run's page does not show %q as text", want)
		}
	}
	if text := textOf(t, mustGet(t, s, "/run?id="+escapeQuery(hostileID+"-gate-open"))); !strings.Contains(text, `"room <script>alert(\"xss\")</script>`) {
		t.Errorf("the suspended run's page does not show the gate's arguments as text")
	}
	text = textOf(t, mustGet(t, s, "/run?id="+escapeQuery(hostileID+"-memory")))
	for _, want := range []string{
		`"value": "note <script>alert(\"xss\")</script>`, // the proposal received, the entries shown
		"write " + hostileID + "-memory/1~memory.1",
		"proposal proposal.1: child run " + hostileID + "-memory/1~:proposal.1 ended",
		"showing view notes version 1",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the memory run's page does not show %q as text", want)
		}
	}
	// The live stream's fragments are inert too.
	frag := liveFragments(t, s, st, hostileID+"-open")
	checkInert(t, "live fragments", "<!doctype html><html><head></head><body>"+frag+"</body></html>")
	if !strings.Contains(textOf(t, frag), "reply "+scriptTag) {
		t.Errorf("the live fragments do not show the reply as text:\n%s", frag)
	}
}

func escapeQuery(s string) string {
	r := strings.NewReplacer("%", "%25", "&", "%26", "#", "%23", "+", "%2B", " ", "%20", `"`, "%22", "<", "%3C", ">", "%3E", "'", "%27")
	return r.Replace(s)
}

// checkInert parses a page as a browser would and fails on any element,
// attribute or URL the page's own templates do not make.
func checkInert(t *testing.T, page, body string) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatalf("%s: %v", page, err)
	}
	allowed := map[string]bool{}
	for _, tag := range strings.Fields(`html head body meta title link script header nav main a h1 h2 h3 p span b q code pre
		div section details summary form label input select option button table thead tbody tr th td ul ol li figure figcaption
		svg rect text title`) {
		allowed[tag] = true
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			if !allowed[n.Data] {
				t.Errorf("%s: element <%s> the templates never make", page, n.Data)
			}
			for _, a := range n.Attr {
				checkAttr(t, page, n, a)
			}
			if n.Data == "script" && (attr(n, "src") != "/static/live.js" || n.FirstChild != nil) {
				t.Errorf("%s: a script that is not the page's own: %s", page, render(n))
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
}

func checkAttr(t *testing.T, page string, n *html.Node, a html.Attribute) {
	t.Helper()
	key := strings.ToLower(a.Key)
	switch {
	case strings.HasPrefix(key, "on"):
		t.Errorf("%s: event handler %s=%q on <%s>", page, a.Key, a.Val, n.Data)
	case key == "style" || key == "srcdoc" || key == "formaction":
		t.Errorf("%s: attribute %s on <%s>", page, a.Key, n.Data)
	case key == "href" || key == "src" || key == "action":
		v := strings.TrimSpace(a.Val)
		if !(strings.HasPrefix(v, "/") && !strings.HasPrefix(v, "//")) && !strings.HasPrefix(v, "#") {
			t.Errorf("%s: %s=%q on <%s> leaves the site", page, a.Key, a.Val, n.Data)
		}
	}
	known := strings.Fields(`href src action rel lang charset name content id class value type title method size selected hidden
		colspan open data-live data-action data-call data-attempt data-last-seq data-group data-stat data-value data-total role aria-label
		viewbox width height x y preserveaspectratio defer`)
	found := false
	for _, k := range known {
		found = found || k == key
	}
	if !found {
		t.Errorf("%s: attribute %s=%q on <%s> the templates never write", page, a.Key, a.Val, n.Data)
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func render(n *html.Node) string {
	var b strings.Builder
	_ = html.Render(&b, n)
	return b.String()
}

// textOf is the text a browser shows of a page.
func textOf(t *testing.T, body string) string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return b.String()
}

// liveFragments resumes an unfinished run while its live stream is open and
// returns the HTML the stream carried.
func liveFragments(t *testing.T, s *view.Server, st *memstore.Store, id string) string {
	t.Helper()
	events := streamWhile(t, s, "/live?id="+escapeQuery(id)+"&seq=0", func() {
		clock := runfixture.NewClock(runfixture.Base.Add(3600e9))
		r := runfixture.Runner(st, clock, 0.000001, hostileTurns()...)
		if _, err := r.Resume(context.Background(), id, hostileAgent()); err != nil {
			t.Errorf("resume: %v", err)
		}
	})
	var b strings.Builder
	for _, e := range events {
		if e.Name == "steps" || e.Name == "status" {
			b.WriteString(e.Data)
		}
	}
	return b.String()
}
