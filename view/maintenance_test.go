package view_test

import (
	"strings"
	"testing"

	"github.com/polyloop/polyloop/internal/runfixture"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/view"
)

// TestMaintenanceInSteps: each step of a memory run shows its maintenance,
// as polyloop show prints it — the operations with their outcomes, write
// ids and values, the proposals received (linked to the child's page),
// done or not — and each model call names the view version it showed.
func TestMaintenanceInSteps(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	clock := runfixture.NewClock(runfixture.Base)
	runfixture.Remembering(t, st, clock, runfixture.MemoryRun, "the goal")
	runfixture.RememberingCrashed(t, st, clock, "memory-open", "a detail", 7)
	s, err := view.New(view.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	body := mustGet(t, s, "/run?id="+runfixture.MemoryRun)
	step1 := section(t, body, `<section class="step" id="step-1"`, `</section>`)
	contains(t, "step 1", step1,
		`model call <code>m1.1</code> attempt 1 · showing view <code>notes</code> version 0`,
		`<div class="maintenance" id="maintenance-1">`,
		`maintenance <span class="badge done">done</span>`,
		`operation <code>context.1</code> <span class="badge done">done</span>`,
		`proposal <code>proposal.1</code>: child run <a href="/run?id=memory-1%2f1~%3aproposal.1">memory-1/1~:proposal.1</a> ended <span class="badge completed">completed</span>: reception <b>handled</b> by succeeded`,
		`&#34;value&#34;: &#34;the goal&#34;`,
		`operation <code>memory.1</code> <span class="badge done">done</span> · write <code>memory-1/1~memory.1</code>`,
		`operation <code>view.1</code> <span class="badge done">done</span> · write <code>memory-1/1~view.1</code>`)
	child := mustGet(t, s, "/run?id=memory-1%2f1~%3aproposal.1")
	contains(t, "the proposal's page", child, `agent <a href="/?agent=notetaker.proposer">notetaker.proposer</a>`)
	step2 := section(t, body, `<section class="step" id="step-2"`, `</section>`)
	contains(t, "step 2", step2,
		`model call <code>m2.1</code> attempt 1 · showing view <code>notes</code> version 1`,
		`ended <span class="badge llm_error">llm_error</span>: reception <b>handled</b> by failed`,
		`&#34;skipped&#34;: true`,
		`maintenance <span class="badge done">done</span>`)
	if n := strings.Count(step2, `<div class="op">`); n != 1 {
		t.Errorf("step 2 shows %d operations, want 1 (context.1: the skipped proposal ends the maintenance)", n)
	}
	body = mustGet(t, s, "/run?id=memory-open")
	step1 = section(t, body, `<section class="step" id="step-1"`, `</section>`)
	contains(t, "step 1 of the unfinished run", step1,
		`maintenance <span class="badge unfinished">not done</span>`,
		`operation <code>context.1</code> <span class="badge done">done</span>`,
		`proposal <code>proposal.1</code>: child run`)
	contains(t, "the status of the unfinished run", section(t, body, `<section id="status"`, `</section>`),
		`resume would: <b>maintain</b>`)
}
