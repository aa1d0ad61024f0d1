package polylooptest

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// brokenCase is an implementation broken so that one check must fail.
type brokenCase struct {
	suite, check string
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
	all = append(all, brokenMemoryCases()...)
	return append(all, brokenSinkCases()...)
}

// TestBrokenImplementationsFail runs each check against an implementation
// broken for it and asserts that the check fails (not skips, not passes).
func TestBrokenImplementationsFail(t *testing.T) {
	for i, bc := range allBrokenCases() {
		t.Run(fmt.Sprintf("%s/%s/%d", bc.suite, bc.check, i), func(t *testing.T) {
			o := bc.run(t)
			switch {
			case o.err != nil:
				t.Logf("failed as it must: %.300s", o.err)
			case o.skip != "":
				t.Errorf("the check skipped (%s) instead of failing", o.skip)
			default:
				t.Errorf("the check passed a broken implementation")
			}
		})
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
	names = append(names, prefixed("MemoryStore", memoryChecks)...)
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
