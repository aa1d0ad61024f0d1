package polylooptest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// brokenCase is an implementation broken so that one check must fail,
// breaking one rule.
type brokenCase struct {
	suite, check string
	rule         rule
	run          func(t *testing.T) outcome
}

// runNamed runs the check called name.
func runNamed[H any](t testing.TB, checks []check[H], name string, h H, s settings) outcome {
	for _, c := range checks {
		if c.name == name {
			return runCheck(t, s, h, c)
		}
	}
	return outcome{err: fmt.Errorf("no check %q", name)}
}

// spin holds a lock long enough for concurrent callers to collide.
func spin() { time.Sleep(200 * time.Microsecond) }

func (h ModelClientHarness) settings() settings {
	return newSettings(h.Timeout, h.CancelWithin, h.Skip)
}
func (h ParserHarness) settings() settings   { return newSettings(h.Timeout, 0, h.Skip) }
func (h ExecutorHarness) settings() settings { return newSettings(h.Timeout, h.CancelWithin, h.Skip) }
func (h StoreHarness) settings() settings    { return newSettings(h.Timeout, 0, h.Skip) }
func (h SinkHarness) settings() settings     { return newSettings(h.Timeout, h.CancelWithin, h.Skip) }

func allBrokenCases() []brokenCase {
	var all []brokenCase
	all = append(all, brokenModelCases()...)
	all = append(all, brokenParserCases()...)
	all = append(all, brokenExecutorCases()...)
	all = append(all, brokenStoreCases()...)
	all = append(all, brokenLeaseCases()...)
	all = append(all, brokenStreamCases()...)
	all = append(all, brokenMemoryCases()...)
	all = append(all, brokenBlobCases()...)
	all = append(all, brokenEnvCases()...)
	all = append(all, brokenReconcilerCases()...)
	return append(all, brokenSinkCases()...)
}

// TestBrokenImplementationsFail runs each check against an implementation
// broken for it and asserts that the check fails (not skips, not passes)
// with a failure that names the rule it was broken for — not merely some
// failure, which a broken harness or a kit bug could give too (fstest's
// TestTestFSWrappedErrors asserts its failures the same way).
func TestBrokenImplementationsFail(t *testing.T) {
	for i, bc := range allBrokenCases() {
		t.Run(fmt.Sprintf("%s/%s/%d", bc.suite, bc.check, i), func(t *testing.T) {
			o := bc.run(t)
			switch {
			case o.err != nil && slices.Contains(rulesOf(o.err), bc.rule):
				t.Logf("failed as it must: %.300s", o.err)
			case o.err != nil:
				t.Errorf("the check failed, but not for the rule «%s» it was broken for: rules %q, failure %.500s", bc.rule, rulesOf(o.err), o.err)
			case o.skip != "":
				t.Errorf("the check skipped (%s) instead of failing", o.skip)
			default:
				t.Errorf("the check passed a broken implementation")
			}
		})
	}
}

// TestEveryRuleHasABrokenCase keeps the self-test complete: a rule that no
// broken implementation is caught breaking is a rule the kit may not
// check.
func TestEveryRuleHasABrokenCase(t *testing.T) {
	caught := map[rule]bool{}
	for _, bc := range allBrokenCases() {
		caught[bc.rule] = true
	}
	rules := slices.Concat(allRules, leaseRules, memoryRules, blobRules, reconcileRules)
	if len(brokenEnvCases()) > 0 { // the broken environments wrap the sandbox backend: Linux
		rules = append(rules, envRules...)
	}
	for _, r := range rules {
		if !caught[r] {
			t.Errorf("no broken implementation breaks «%s»", r)
		}
	}
}

// TestViolationsNameTheirRule: a failure's message names the rule, and
// the rules of joined and wrapped failures are all found.
func TestViolationsNameTheirRule(t *testing.T) {
	err := errors.Join(
		fmt.Errorf("in check: %w", broke(ruleDeterministic, "twice %d", 2)),
		tag(ruleAtomic, errors.New("partial")),
		errors.New("not a rule"))
	if got := rulesOf(err); !slices.Equal(got, []rule{ruleDeterministic, ruleAtomic}) {
		t.Errorf("rulesOf = %q", got)
	}
	if !strings.Contains(err.Error(), "breaks «"+string(ruleDeterministic)+"»: twice 2") {
		t.Errorf("message %q does not name the rule", err)
	}
	if again := tag(ruleReadsBack, fmt.Errorf("ctx: %w", broke(ruleEmptyLog, "x"))); !slices.Equal(rulesOf(again), []rule{ruleEmptyLog}) {
		t.Errorf("tag replaced the rule named where the failure was found: %q", rulesOf(again))
	}
	if tag(ruleAtomic, nil) != nil || retag(ruleAtomic, nil) != nil {
		t.Error("tagging nil gave an error")
	}
}

// TestEveryCheckHasABrokenCase keeps the self-test complete: adding a check
// without a broken implementation that it catches fails here.
func TestEveryCheckHasABrokenCase(t *testing.T) {
	covered := map[string]bool{}
	for _, bc := range allBrokenCases() {
		covered[bc.suite+"/"+bc.check] = true
	}
	var names []string
	names = append(names, prefixed("ModelClient", modelChecks)...)
	names = append(names, prefixed("DecisionParser", parserChecks)...)
	names = append(names, prefixed("ActionExecutor", executorChecks)...)
	names = append(names, prefixed("Store", storeChecks)...)
	names = append(names, prefixed("EventSink", sinkChecks)...)
	names = append(names, prefixed("StreamingModelClient", streamChecks)...)
	names = append(names, prefixed("MemoryStore", memoryChecks)...)
	names = append(names, prefixed("BlobStore", blobChecks)...)
	names = append(names, prefixed("Reconciler", reconcilerChecks)...)
	if len(brokenEnvCases()) > 0 {
		names = append(names, prefixed("EnvProvider", envChecks)...)
	}
	var missing []string
	for _, n := range names {
		if !covered[n] {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		t.Errorf("checks without a broken implementation: %s", strings.Join(missing, ", "))
	}
}

func prefixed[H any](suite string, checks []check[H]) []string {
	out := make([]string, len(checks))
	for i, c := range checks {
		out[i] = suite + "/" + c.name
	}
	return out
}
