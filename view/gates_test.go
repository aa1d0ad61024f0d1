package view_test

import (
	"strings"
	"testing"

	"github.com/polyloop/polyloop/internal/runfixture"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/view"
)

// gatedServer serves runfixture's gated, suspended and taken-over runs.
func gatedServer(t *testing.T) *view.Server {
	t.Helper()
	st := memstore.New()
	clock := runfixture.NewClock(runfixture.Base)
	runfixture.Gated(t, st, clock)
	runfixture.TakenOver(t, st, clock)
	s, _ := newServer(t, view.Options{Store: st})
	return s
}

// TestSuspendedRunPage: a suspended run's page says what it awaits and
// lists each pending gate — the action, its arguments, its deadline, the
// command that answers it — and the gates wait in their step.
func TestSuspendedRunPage(t *testing.T) {
	t.Parallel()
	body := mustGet(t, gatedServer(t), "/run?id="+runfixture.SuspendedRun)
	status := section(t, body, `<section id="status"`, `</section>`)
	contains(t, "the status of a suspended run", status,
		`<span class="badge awaiting">awaiting approval and delivery</span> suspended`,
		`approval of action <code>a1.2</code> (step 1) · <code>send</code> · deadline 2026-12-01 12:01:00Z`,
		`&#34;to&#34;: &#34;dan&#34;`,
		`<code>polyloop approve suspended-1 a1.2 --allow</code>`,
		`delivery of action <code>a1.3</code> (step 1) · <code>book</code> · deadline 2026-12-01 13:01:00Z`,
		`&#34;room&#34;: &#34;9&#34;`,
		`<code>polyloop deliver suspended-1 a1.3 --status executed --observation TEXT</code>`)
	step := section(t, body, `<section class="step" id="step-1"`, `</section>`)
	contains(t, "step 1 of a suspended run", step,
		`<div class="gate waiting" id="gate-a1.2">`, `<span class="badge awaiting">awaiting approval</span>`,
		`<div class="gate waiting" id="gate-a1.3">`, `<span class="badge awaiting">awaiting delivery</span>`)
}

// TestGateRecordsInSteps: the gates of a finished run, each in its step
// with its answer — allowed or denied by whom with what note, delivered by
// whom with what status, timed out — and the actions settled at a gate
// with their outcomes.
func TestGateRecordsInSteps(t *testing.T) {
	t.Parallel()
	body := mustGet(t, gatedServer(t), "/run?id="+runfixture.GatedRun)
	step1 := section(t, body, `<section class="step" id="step-1"`, `</section>`)
	contains(t, "step 1", step1,
		`approval requested for action <code>a1.1</code> (1 of 3) · <code>send</code>`,
		`<span class="badge allowed">allowed</span> by <b>ana</b> — note: <q>fine</q>`,
		`delivery requested for action <code>a1.2</code> (2 of 3) · <code>book</code>`,
		`<span class="badge delivered">delivered</span> by <b>hotel webhook</b>: <span class="badge executed">executed</span>`,
		`<span class="badge denied">denied</span> by <b>ana</b> — note: <q>not to bob</q>`,
		`action <code>a1.2</code> (2 of 3) · <code>book</code> · settled at its gate, never run here`,
		`<pre class="text">room 7 booked</pre>`,
		`action <code>a1.3</code> (3 of 3) · <code>send</code> · settled at its gate, never run here`,
		`<pre class="text">sent to ana</pre>`)
	step2 := section(t, body, `<section class="step" id="step-2"`, `</section>`)
	contains(t, "step 2", step2, `<span class="badge timedout">timed out</span> denied: no answer before the deadline; applied by a resume at 2026-12-01 11:00:00Z`)
	contains(t, "the timeline", section(t, body, `<ol class="invocations">`, `</ol>`),
		"approve: a1.1 allowed by ana", "deliver: a1.2 delivered by hotel webhook", "resume after the deadline")
}

// TestTakeoverOnTheTimeline: a lease take-over is marked on the bar at its
// record and named in the invocation it began: from whom, to whom, why.
func TestTakeoverOnTheTimeline(t *testing.T) {
	t.Parallel()
	body := mustGet(t, gatedServer(t), "/run?id="+runfixture.TakeoverRun)
	tl := section(t, body, `<div class="timeline"`, `</div>`)
	contains(t, "the timeline", tl,
		`class="takeover"><title>record 4: lease taken over from pid 4242 on stuck-host`,
		`<span class="badge takeover">lease taken over</span> at record 4 (forced): from stuck-host (pid 4242, holding since`)
}

// TestRunsListMarksAwaiting: a suspended run is listed as awaiting what it
// waits for, not merely unfinished.
func TestRunsListMarksAwaiting(t *testing.T) {
	t.Parallel()
	body := mustGet(t, gatedServer(t), "/")
	row := section(t, body, `<a class="runlink" href="/run?id=`+runfixture.SuspendedRun+`"`, `</tr>`)
	contains(t, "the suspended run's row", row, `<span class="badge awaiting">awaiting approval and delivery</span>`)
	row = section(t, body, `<a class="runlink" href="/run?id=`+runfixture.GatedRun+`"`, `</tr>`)
	contains(t, "the gated run's row", row, `<span class="badge completed">completed</span>`)
}

// section is the part of body from the first from to the next to.
func section(t *testing.T, body, from, to string) string {
	t.Helper()
	i := strings.Index(body, from)
	if i < 0 {
		t.Fatalf("the page lacks %q", from)
	}
	j := strings.Index(body[i:], to)
	if j < 0 {
		t.Fatalf("the page lacks %q after %q", to, from)
	}
	return body[i : i+j+len(to)]
}
