package agentfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
)

// TestLoadReportsEveryStaticProblemAtOnce: a typo, and a cost budget no
// price can check, are reported together (not one, then after its fix the
// other), in file order; the MCP server is not started, and the error says
// what is left unchecked until it is.
func TestLoadReportsEveryStaticProblemAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	p := writeFile(t, "agent.yaml", "name: a\nmodel:\n  provider: script\n  script: [{text: x}]\n  temprature: 0.5\n"+
		"limits: {max_steps: 3, max_cost_usd: 1}\ntools:\n  mcp:\n    - {name: files, command: sh, args: [-c, 'touch "+started+"']}\n")
	_, err := Load(context.Background(), p, nil)
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 2 || list[0].Field != "model.temprature" || list[1].Field != "limits.max_cost_usd" {
		t.Fatalf("Load: %v\nwant the typo and the uncheckable budget together", err)
	}
	if !errors.Is(err, polyloop.ErrUncheckableBudget) || !errors.Is(err, ErrInvalid) {
		t.Errorf("Load: %v: errors.Is does not reach ErrUncheckableBudget and ErrInvalid", err)
	}
	var unchecked *UncheckedError
	if !errors.As(err, &unchecked) || !strings.Contains(err.Error(), `not checked yet, as it needs the MCP servers "files" started`) {
		t.Errorf("Load: %v\ndoes not say what needs the MCP server", err)
	}
	if _, err := os.Stat(started); err == nil {
		t.Error("the MCP server was started although the file has problems")
	}
}

// A file without MCP servers gets its problems alone; a model section that
// did not check is not built (no second report of the same problem).
func TestLoadStaticProblemsWithoutServers(t *testing.T) {
	t.Parallel()
	p := writeFile(t, "agent.yaml", "name: a\nmodel:\n  provider: nosuch\nlimits: {max_steps: -1, max_cost_usd: 1}\n")
	_, err := Load(context.Background(), p, nil)
	var list ErrorList
	var unchecked *UncheckedError
	if !errors.As(err, &list) || errors.As(err, &unchecked) || strings.Contains(err.Error(), "not available in this build") {
		t.Fatalf("Load: %v", err)
	}
}

// TestLoadReportsBudgetWithoutKey: a cost budget no price can check is a
// static problem — it needs no API key —, so it comes in the first round
// with a typo and the missing key, not after the key is set.
func TestLoadReportsBudgetWithoutKey(t *testing.T) {
	t.Parallel()
	p := writeFile(t, "agent.yaml", "name: a\nmodle: x\nmodel: {provider: openai, model: some-unknown-model}\nlimits: {max_cost_usd: 1}\n")
	noKey := &Options{Getenv: func(string) string { return "" }}
	_, err := Load(context.Background(), p, noKey)
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 3 || !errors.Is(err, polyloop.ErrUncheckableBudget) ||
		!strings.Contains(err.Error(), "OPENAI_API_KEY") || !strings.Contains(err.Error(), "modle") {
		t.Fatalf("Load without a key: %v\nwant the typo, the missing key and the uncheckable budget together", err)
	}
	if list[2].Field != "limits.max_cost_usd" {
		t.Errorf("Load without a key: problems not in file order: %v", err)
	}
	// Without the typo, the missing key and the budget come together.
	clean := writeFile(t, "agent.yaml", "name: a\nmodel: {provider: openai, model: some-unknown-model}\nlimits: {max_cost_usd: 1}\n")
	_, err = Load(context.Background(), clean, noKey)
	if !errors.As(err, &list) || len(list) != 2 || !errors.Is(err, polyloop.ErrUncheckableBudget) || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Fatalf("Load without a key, no typo: %v\nwant the missing key and the uncheckable budget together", err)
	}
	// With the key set, the same budget problem (and the typo) is reported.
	withKey := &Options{Getenv: func(k string) string {
		if k == "OPENAI_API_KEY" {
			return "sk-test"
		}
		return ""
	}}
	_, err = Load(context.Background(), p, withKey)
	if !errors.As(err, &list) || len(list) != 2 || !errors.Is(err, polyloop.ErrUncheckableBudget) {
		t.Fatalf("Load with a key: %v", err)
	}
	// A priced model without a key: only the typo and the key.
	priced := writeFile(t, "agent.yaml", "name: a\nmodle: x\nmodel: {provider: openai, model: some-unknown-model, prices: {some-unknown-model: {input: 1, output: 2}}}\nlimits: {max_cost_usd: 1}\n")
	_, err = Load(context.Background(), priced, noKey)
	if !errors.As(err, &list) || len(list) != 2 || errors.Is(err, polyloop.ErrUncheckableBudget) {
		t.Fatalf("Load of a priced model without a key: %v", err)
	}
}
